// The status condition every kind carries (ExternalSecret, the stores, PushSecret, the
// generator state): its own module so the kinds' type modules import it without a cycle.

/** A status condition (the shape of metav1.Condition, without observedGeneration required). */
export interface Condition {
  /** `Ready` on every kind; `Deleted` on ExternalSecrets. */
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  /** RFC 3339 timestamp. */
  lastTransitionTime?: string;
}

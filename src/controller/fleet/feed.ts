// The change counts of cloud store entries the controller was told of (docs/fleet.md,
// "Notifications"): AWS events from the operator's SQS queue (aws-queue.ts), GCP Secret
// Manager events from the operator's Pub/Sub subscription (gcp-subscription.ts). A count is
// an entry's version in the pods' change generations (fleet.ts), so a change reaches exactly
// the pods whose ExternalSecrets read the entry. Bounded: at most MAX_ENTRIES entries.

/** Entries whose change counts are kept; past it the oldest are forgotten (their pods then
 *  get one spurious generation, that is one extra fetch each). */
export const MAX_ENTRIES = 50_000;

/** Counts by scope (a provider's service and region or location) and canonical name. */
export class ChangeFeed {
  private readonly counts = new Map<string, number>();
  /** Changes per scope: the version of `*` (a find over the scope). */
  private readonly epochs = new Map<string, number>();

  version(scope: string, name: string): string | undefined {
    const n = name === '*' ? this.epochs.get(scope) : this.counts.get(`${scope}\n${name}`);
    return n === undefined ? undefined : String(n);
  }

  /** One change naming `names` (canonical) in `scope`. */
  record(scope: string, names: readonly string[]): void {
    this.epochs.set(scope, (this.epochs.get(scope) ?? 0) + 1);
    for (const name of names) {
      const key = `${scope}\n${name}`;
      const n = (this.counts.get(key) ?? 0) + 1;
      this.counts.delete(key); // re-inserted last: the map's order is the eviction order
      this.counts.set(key, n);
      if (this.counts.size > MAX_ENTRIES) this.counts.delete(this.counts.keys().next().value!);
    }
  }
}

// Reading a Prometheus histogram from /metrics text: bucket counts summed over labels, the
// difference between two scrapes, and histogram_quantile()'s linear interpolation.

export interface HistogramSnapshot {
  /** Cumulative counts by upper bound (le), ascending; the last bound is +Inf. */
  buckets: { le: number; count: number }[];
  sum: number;
  count: number;
}

function labelsMatch(labels: string, want: Record<string, string>): boolean {
  return Object.entries(want).every(([k, v]) => labels.includes(`${k}="${v}"`));
}

/** The histogram `name`, summed over every label set matching `where`. */
export function parseHistogram(text: string, name: string, where: Record<string, string> = {}): HistogramSnapshot {
  const byLe = new Map<number, number>();
  let sum = 0;
  let count = 0;
  const line = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s+(\S+)/;
  for (const raw of text.split('\n')) {
    const m = line.exec(raw);
    if (!m || !m[1]!.startsWith(name)) continue;
    const labels = m[2] ?? '';
    if (!labelsMatch(labels, where)) continue;
    const value = Number(m[3]);
    if (m[1] === `${name}_bucket`) {
      const le = /le="([^"]+)"/.exec(labels)?.[1];
      const bound = le === '+Inf' ? Infinity : Number(le);
      byLe.set(bound, (byLe.get(bound) ?? 0) + value);
    } else if (m[1] === `${name}_sum`) sum += value;
    else if (m[1] === `${name}_count`) count += value;
  }
  const buckets = [...byLe].sort(([a], [b]) => a - b).map(([le, c]) => ({ le, count: c }));
  return { buckets, sum, count };
}

/** after − before, bucket by bucket (both from the same process). */
export function diffHistogram(after: HistogramSnapshot, before: HistogramSnapshot): HistogramSnapshot {
  const prev = new Map(before.buckets.map((b) => [b.le, b.count]));
  return {
    buckets: after.buckets.map((b) => ({ le: b.le, count: b.count - (prev.get(b.le) ?? 0) })),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/** Prometheus' histogram_quantile(): linear interpolation inside the bucket holding rank q·n. */
export function histogramQuantile(q: number, h: HistogramSnapshot): { value: number; bucketUpper: number } | undefined {
  const total = h.buckets[h.buckets.length - 1]?.count ?? 0;
  if (total === 0) return undefined;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const b of h.buckets) {
    if (b.count >= rank) {
      if (b.le === Infinity) return { value: prevLe, bucketUpper: Infinity };
      const inBucket = b.count - prevCount;
      const value = inBucket > 0 ? prevLe + (b.le - prevLe) * ((rank - prevCount) / inBucket) : b.le;
      return { value, bucketUpper: b.le };
    }
    prevLe = b.le;
    prevCount = b.count;
  }
  return undefined;
}

// Go durations, the one parser for every duration ESI reads: ExternalSecret and PushSecret
// `refreshInterval`, ClusterExternalSecret `refreshTime`, the controller's flags and the
// webhook's duration annotations (`1h`, `1h30m`, `90s`, `1.5h`, `500ms`; `0` alone is zero,
// "never refresh" where a refresh interval is meant). The CRD validates the syntax; a
// cluster whose CRDs came from elsewhere may not, so parse errors name the field.

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a Go duration; throws with a message naming `field`. */
export function parseGoDuration(raw: string, field?: string): number {
  const value = raw.trim();
  if (value === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|\u00b5s|ms|s|m|h)/y;
  let total = 0;
  let end = 0;
  for (let m = re.exec(value); m; m = re.exec(value)) {
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    end = re.lastIndex;
  }
  if (!value || end !== value.length) {
    const what = field ? `${field} "${raw}"` : `"${raw.slice(0, 64)}"`;
    throw new Error(`${what} must be a Go duration such as 30s, 15m or 1h30m`);
  }
  return total;
}

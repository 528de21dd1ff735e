// Pure arithmetic of the peers benchmark: ratios, medians, budget checks and the wording
// of the "Side by side" tables (unit-tested in test/e2e/bench/peers-report.test.ts).

/** ESI's figure over the peer's; undefined when the peer's is 0 or missing. */
export function ratio(esi: number | undefined, peer: number | undefined): number | undefined {
  if (esi === undefined || peer === undefined || !Number.isFinite(esi) || !Number.isFinite(peer) || peer === 0) return undefined;
  return esi / peer;
}

export function median(xs: readonly number[]): number | undefined {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** A budget on the ESI / peer ratio: at most (`max`) or at least (`min`). */
export interface Budget {
  max?: number;
  min?: number;
}

export function withinBudget(r: number | undefined, b: Budget): boolean | undefined {
  if (r === undefined) return undefined;
  if (b.max !== undefined && r > b.max) return false;
  if (b.min !== undefined && r < b.min) return false;
  return true;
}

export function budgetText(b: Budget): string {
  if (b.max !== undefined && b.min !== undefined) return `${b.min}–${b.max}×`;
  if (b.max !== undefined) return `≤ ${b.max}×`;
  if (b.min !== undefined) return `≥ ${b.min}×`;
  return '–';
}

/** Three significant figures, no exponent (for tables). */
export function fmt(x: number | undefined, digits = 3): string {
  if (x === undefined || !Number.isFinite(x)) return '–';
  if (x === 0) return '0';
  const mag = Math.floor(Math.log10(Math.abs(x)));
  const decimals = Math.max(0, digits - 1 - mag);
  return x.toFixed(decimals);
}

/** The ratio cell: "0.82 (met)" / "**1.57** (missed)" against its budget. */
export function ratioCell(r: number | undefined, b: Budget): string {
  const ok = withinBudget(r, b);
  if (ok === undefined) return '–';
  return ok ? `${r!.toFixed(2)} (met)` : `**${r!.toFixed(2)}** (missed)`;
}

/** CPU ms per request from two CPU readings and the requests answered between them. */
export function cpuPerRequest(cpuMsBefore: number, cpuMsAfter: number, requests: number): number | undefined {
  if (requests <= 0) return undefined;
  return (cpuMsAfter - cpuMsBefore) / requests;
}

/** "1.20 / 1.35 / 0.98" → each 1/5/15-minute load average. */
export function loadText(l: readonly number[]): string {
  return l.map((x) => x.toFixed(2)).join(' / ');
}

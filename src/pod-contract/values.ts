// Parsers for the value types annotations use: Go-style durations and Kubernetes
// resource quantities. Errors say what a valid value looks like.
import { parseGoDuration } from '../duration.js';

/** `1h30m`, `45s`, `500ms` → seconds (the one Go-duration parser: src/duration.ts). */
export function parseDuration(raw: string): number {
  return parseGoDuration(raw) / 1000;
}

const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/** The number a Kubernetes quantity stands for (`32Mi` = 33554432, `5m` = 0.005). */
export function quantityValue(raw: string): number {
  const m = /^(\d+(?:\.\d+)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$/.exec(raw.trim());
  if (!m) throw new Error('must be a Kubernetes quantity such as 32Mi, 100m or 0.5');
  return Number(m[1]) * (BINARY[m[2]!] ?? DECIMAL[m[2]!] ?? 1);
}

/** Validates a Kubernetes quantity (`32Mi`, `5m`, `0.5`) within bounds; returns it unchanged. */
export function parseQuantity(raw: string, bounds: { min: number; max: number }): string {
  const value = raw.trim();
  const n = quantityValue(value);
  if (n < bounds.min || n > bounds.max) throw new Error(`"${value}" is out of the allowed range`);
  return value;
}

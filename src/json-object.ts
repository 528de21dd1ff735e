// The one test for "a JSON object" (a map, not null, not an array) that spec checks and
// parsed answers use. Values parsed with lossless numbers (src/providers/json-text.ts)
// test their own way: isJsonObject.
export type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

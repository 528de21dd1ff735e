// Objects handed to templates. They have no Object.prototype, so `constructor`,
// `__proto__`, `toString`… are simply "not defined" in strict mode, and a shared
// prototype whose only member is Symbol.toPrimitive (unreachable from a template path)
// makes them print as "[object]": Handlebars builds its strict-mode error messages by
// string concatenation, which would otherwise throw a TypeError and lose the location.
const SAFE_PROTO: object = Object.freeze(
  Object.create(null, {
    [Symbol.toPrimitive]: { value: () => '[object]', enumerable: false },
  }) as object,
);

export type SafeObject = Record<string, unknown>;

export function safeObject(): SafeObject {
  return Object.create(SAFE_PROTO) as SafeObject;
}

/** Deep copy of parsed JSON/YAML into safe objects (arrays stay arrays). */
export function toSafe(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toSafe);
  if (value !== null && typeof value === 'object') {
    const out = safeObject();
    for (const [k, v] of Object.entries(value)) out[k] = toSafe(v);
    return out;
  }
  return value;
}

/** Plain copy for serializers (yaml refuses objects without a prototype). */
export function toPlain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toPlain);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) Object.defineProperty(out, k, { value: toPlain(v), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return value;
}

// The data a template sees: one property per mounted ExternalSecret, named after it,
// holding that secret's keys as UTF-8 strings: `{{db.password}}`, `{{[my-db].password}}`.
// Objects are prototype-less (see safe.ts), so nothing but the keys is reachable.
import type { TemplateContext } from './engine.js';
import { safeObject, type SafeObject } from './safe.js';

const decoder = new TextDecoder('utf-8');

/** One secret's keys as strings (binary values are decoded as UTF-8, lossy). */
export function secretScope(data: Record<string, Uint8Array>): SafeObject {
  const scope = safeObject();
  for (const [k, v] of Object.entries(data)) scope[k] = decoder.decode(v);
  return scope;
}

/** The context of file templates: every mounted ExternalSecret by name. */
export function buildContext(secrets: ReadonlyMap<string, Record<string, Uint8Array>> | Record<string, Record<string, Uint8Array>>): TemplateContext {
  const ctx = safeObject();
  const entries = secrets instanceof Map ? secrets.entries() : Object.entries(secrets);
  for (const [name, data] of entries) ctx[name] = secretScope(data);
  return ctx;
}

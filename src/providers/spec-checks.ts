// The checks of the references a store spec holds, one each, shared by every provider's
// `validateSpec` and by the webhook's credential backstop (webhook/mutate.ts): a Secret key
// selector, a ServiceAccount selector, a `caBundle` and a `caProvider`. One verdict and one
// message per rule whatever the provider; `field` is the spec path from the provider key
// (`vault.auth.tokenSecretRef`). Names and keys follow src/kube/names.ts.
import { isDataKey, isDnsLabel, isDnsSubdomain } from '../kube/names.js';
import type { CredentialRef } from './types.js';
import { isObject } from '../json-object.js';

const isNonEmpty = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '';
/** A value as messages quote it: names are not secrets, but a field can hold anything. */
const quoted = (v: unknown): string => JSON.stringify(String(v).slice(0, 64));
const found = (...problems: (string | undefined)[]): string[] => problems.filter((p): p is string => p !== undefined);

const PEM_CERTIFICATE = '-----BEGIN CERTIFICATE-----';

/** The name rule of an object a store references (a Secret, ConfigMap or ServiceAccount). */
function referenceNameProblem(field: string, kind: string, name: unknown): string | undefined {
  return isDnsSubdomain(name) ? undefined : `${field} references ${kind} ${quoted(name)}, which is not a valid ${kind} name`;
}

/** The data-key rule of a referenced Secret or ConfigMap key (it becomes a mounted file). */
export function referenceKeyProblem(field: string, key: unknown): string | undefined {
  return isDataKey(key) ? undefined : `${field} key ${quoted(key)} is not a valid key (letters, digits, "-", "_", "."; not "." or starting with "..")`;
}

function namespaceProblem(field: string, namespace: unknown): string | undefined {
  if (namespace === undefined) return undefined;
  return isDnsLabel(namespace) ? undefined : `${field}.namespace must be a namespace name (RFC 1123 label)`;
}

/** A `{name, key, namespace?}` selector of one key of a Secret (or, `kind`, a ConfigMap);
 *  `key: false` for a selector of a whole object. Absent is the caller's rule. */
export function secretKeyProblems(field: string, v: unknown, opts: { key?: boolean; kind?: 'Secret' | 'ConfigMap' } = {}): string[] {
  const kind = opts.kind ?? 'Secret';
  const needKey = opts.key ?? true;
  if (!isObject(v)) return [needKey ? `${field} must be an object with name and key` : `${field} must be an object with name`];
  return found(
    isNonEmpty(v.name) ? referenceNameProblem(field, kind, v.name) : `${field}.name must be a non-empty string`,
    !needKey ? undefined : isNonEmpty(v.key) ? referenceKeyProblem(field, v.key) : `${field}.key must be a non-empty string: a ${kind} key selector needs name and key`,
    namespaceProblem(field, v.namespace),
  );
}

/** A `{name, namespace?, audiences?}` ServiceAccount selector. */
export function serviceAccountProblems(field: string, v: unknown): string[] {
  if (!isObject(v) || !isNonEmpty(v.name)) return [`${field}.name must be a non-empty string`];
  const badAudiences = v.audiences !== undefined && (!Array.isArray(v.audiences) || v.audiences.some((a) => typeof a !== 'string'));
  return found(
    referenceNameProblem(field, 'ServiceAccount', v.name),
    namespaceProblem(field, v.namespace),
    badAudiences ? `${field}.audiences must be a list of strings` : undefined,
  );
}

/** The PEM text of a `caBundle`: base64 of PEM (ESO's field), or a raw PEM; undefined when
 *  it holds no certificate. The one decoding for the check and for every client. */
export function caBundlePem(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const text = value.includes(PEM_CERTIFICATE) ? value : Buffer.from(value, 'base64').toString('utf8');
  return text.includes(PEM_CERTIFICATE) ? text : undefined;
}

/** A `caBundle`, when set, holds at least one PEM certificate. */
export function caBundleProblems(field: string, v: unknown): string[] {
  if (v === undefined || caBundlePem(v) !== undefined) return [];
  return [`${field} must be a base64-encoded PEM certificate bundle`];
}

/** A `caProvider`, when set: `{type: Secret|ConfigMap, name, key, namespace?}`. */
export function caProviderProblems(field: string, v: unknown): string[] {
  if (v === undefined) return [];
  if (!isObject(v)) return [`${field} must be an object with type, name and key`];
  const out: string[] = [];
  if (v.type !== 'Secret' && v.type !== 'ConfigMap') out.push(`${field}.type must be Secret or ConfigMap`);
  out.push(...secretKeyProblems(field, v, { kind: v.type === 'ConfigMap' ? 'ConfigMap' : 'Secret' }));
  return out;
}

/** A server URL a client is built on (`vault.server`, `kubernetes.server.url`, …): http(s)
 *  only, with a host, and no userinfo, query or fragment — the client appends its API path,
 *  so a `?` or `#` would hand the spec the rest of every request URL. A path prefix is kept
 *  (a server behind a path-routing proxy). */
export function serverUrlProblems(field: string, v: unknown, schemes: readonly string[] = ['https:', 'http:'], example = 'https://server.example.com:8200'): string[] {
  if (typeof v !== 'string' || v.trim() === '') return [`${field} must be a URL, e.g. ${example}`];
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return [`${field} ${quoted(v)} is not a URL`];
  }
  const out: string[] = [];
  if (!schemes.includes(u.protocol)) out.push(`${field} must use ${schemes.map((s) => `${s}//`).join(' or ')}, got "${u.protocol}"`);
  if (!u.hostname) out.push(`${field} must name a host`);
  if (u.username || u.password) out.push(`${field} must not carry credentials (user:password@)`);
  if (v.includes('?') || v.includes('#')) out.push(`${field} must not have a query or fragment ("?" or "#"): the client appends the API path`);
  return out;
}

/** The webhook's backstop over what `references` declared, whether or not the provider's
 *  `validateSpec` checked it (a third-party provider may not): the same name and key rules. */
export function credentialRefProblems(c: Pick<CredentialRef, 'path' | 'kind' | 'name' | 'key'>): string[] {
  return found(referenceNameProblem(c.path, c.kind, c.name), c.key === undefined ? undefined : referenceKeyProblem(c.path, c.key));
}

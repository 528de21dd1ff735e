// What a Kubernetes object name or namespace may be, as the apiserver checks it
// (apimachinery's validation: RFC 1123 subdomains for most object names, RFC 1123 labels
// for namespaces). One place for every consumer: the webhook's annotation parsing, the
// spec checks of ExternalSecrets, stores and PushSecrets, and the REST paths of
// src/kube/paths.ts, which refuse anything else. A name a tenant writes is a name, never a
// path: `..`, `/` and `%` fail both rules (SECURITY.md, "The controller").

const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const LABEL_RE = new RegExp(`^${LABEL}$`);
const SUBDOMAIN_RE = new RegExp(`^${LABEL}(\\.${LABEL})*$`);

const MAX_LABEL = 63;
const MAX_SUBDOMAIN = 253;

export type NameRule = 'subdomain' | 'label';

/** An RFC 1123 label: a namespace, a container, a ServiceAccount-less label value part. */
export function isDnsLabel(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_LABEL && LABEL_RE.test(value);
}

/** An RFC 1123 subdomain: the name of a Secret, ConfigMap, custom resource, ... */
export function isDnsSubdomain(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_SUBDOMAIN && SUBDOMAIN_RE.test(value);
}

export function isValidName(value: unknown, rule: NameRule): boolean {
  return rule === 'label' ? isDnsLabel(value) : isDnsSubdomain(value);
}

/** What is wrong with `value` as a name under `rule`, phrased to follow the field's path
 *  (`spec.target.name must be ...`); undefined when it is fine. Quotes at most 64 characters
 *  of the value: names are not secrets, but a field can hold anything. */
export function nameProblem(value: unknown, rule: NameRule): string | undefined {
  if (isValidName(value, rule)) return undefined;
  const shown = typeof value === 'string' ? JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value) : typeof value;
  const what = rule === 'label'
    ? `an RFC 1123 label (at most ${MAX_LABEL} lowercase letters, digits and '-')`
    : `an RFC 1123 subdomain (at most ${MAX_SUBDOMAIN} lowercase letters, digits, '-' and '.', in dot-separated labels)`;
  return `must be ${what}, got ${shown}`;
}

/** A name that failed its rule where it was about to be used (a REST path). */
export class InvalidNameError extends Error {
  constructor(readonly field: string, readonly problem: string) {
    super(`${field} ${problem}`);
    this.name = 'InvalidNameError';
  }
}

/** Throws InvalidNameError unless `value` is a valid name under `rule`. */
export function assertName(field: string, value: unknown, rule: NameRule): string {
  const problem = nameProblem(value, rule);
  if (problem) throw new InvalidNameError(field, problem);
  return value as string;
}

/** A Secret or ConfigMap data key, as the apiserver checks it (apimachinery's
 *  IsConfigMapKey): letters, digits, '-', '_' and '.', at most 253, not '.' and not
 *  starting with '..'. It is also a projected item path, so a key is never a path. */
export function isDataKey(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_SUBDOMAIN && /^[-._a-zA-Z0-9]+$/.test(value) && value !== '.' && !value.startsWith('..');
}

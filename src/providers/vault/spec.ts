// Static checks of a `spec.provider.vault` object (ESO v1 field names), without I/O.
// Every problem names the field and what to fix; a spec with problems gets no client.
import type { VaultAuth, VaultProvider } from '../../api/types.js';
import { fieldProblems, type FieldRule } from '../fields.js';
import { isObject } from '../../json-object.js';

/** Auth methods ESI implements, in the order the docs list them. */
const AUTH_METHODS = ['tokenSecretRef', 'appRole', 'kubernetes', 'jwt'] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

/** Auth methods of the API that ESI accepts in a manifest but cannot use. */
const UNSUPPORTED_AUTH = ['ldap', 'userPass', 'cert', 'iam'] as const;

/** Headers the provider sets itself; `headers` may not override them. */
const RESERVED_HEADERS = ['x-vault-token', 'x-vault-namespace', 'x-vault-request', 'content-type', 'host'];

const isNonEmpty = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '';

/** Every field that references a Secret, a ServiceAccount, a CA or the server. */
export const FIELDS: readonly FieldRule[] = [
  { path: 'server', kind: 'url', required: 'always', example: 'https://vault.example.com:8200' },
  { path: 'caBundle', kind: 'caBundle' },
  { path: 'caProvider', kind: 'caProvider' },
  { path: 'auth.tokenSecretRef', kind: 'secretKey' },
  { path: 'auth.appRole.roleRef', kind: 'secretKey' },
  { path: 'auth.appRole.secretRef', kind: 'secretKey', required: 'withParent' },
  { path: 'auth.kubernetes.secretRef', kind: 'secretKey' },
  { path: 'auth.kubernetes.serviceAccountRef', kind: 'serviceAccount' },
  { path: 'auth.jwt.secretRef', kind: 'secretKey' },
  { path: 'auth.jwt.kubernetesServiceAccountToken.serviceAccountRef', kind: 'serviceAccount', required: 'withParent', audiencesAt: 'auth.jwt.kubernetesServiceAccountToken' },
  { path: 'tls.certSecretRef', kind: 'secretKey' },
  { path: 'tls.keySecretRef', kind: 'secretKey' },
];

function checkOptionalString(v: unknown, field: string, problems: string[]): void {
  if (v !== undefined && !isNonEmpty(v)) problems.push(`${field} must be a non-empty string when set`);
}

function checkAppRole(a: Record<string, unknown>, problems: string[]): void {
  checkOptionalString(a.path, 'vault.auth.appRole.path', problems);
  const hasId = a.roleId !== undefined;
  const hasRef = a.roleRef !== undefined;
  if (hasId === hasRef) problems.push('vault.auth.appRole needs exactly one of roleId or roleRef');
  if (hasId) checkOptionalString(a.roleId, 'vault.auth.appRole.roleId', problems);
}

function checkKubernetes(k: Record<string, unknown>, problems: string[]): void {
  checkOptionalString(k.mountPath, 'vault.auth.kubernetes.mountPath', problems);
  if (!isNonEmpty(k.role)) problems.push('vault.auth.kubernetes.role must name the Vault role');
  if (k.secretRef !== undefined && k.serviceAccountRef !== undefined) {
    problems.push('vault.auth.kubernetes: set secretRef or serviceAccountRef, not both');
  }
}

function checkJwt(j: Record<string, unknown>, problems: string[]): void {
  checkOptionalString(j.path, 'vault.auth.jwt.path', problems);
  checkOptionalString(j.role, 'vault.auth.jwt.role', problems);
  const hasSecret = j.secretRef !== undefined;
  const hasSa = j.kubernetesServiceAccountToken !== undefined;
  if (hasSecret === hasSa) problems.push('vault.auth.jwt needs exactly one of secretRef or kubernetesServiceAccountToken');
  if (hasSa && !isObject(j.kubernetesServiceAccountToken)) problems.push('vault.auth.jwt.kubernetesServiceAccountToken must be an object with serviceAccountRef');
}

/** The one auth method a valid spec sets. */
export function authMethodOf(auth: VaultAuth | undefined): AuthMethod | undefined {
  if (!auth) return undefined;
  return AUTH_METHODS.find((m) => auth[m] != null);
}

function checkAuth(auth: unknown, problems: string[]): void {
  if (!isObject(auth)) {
    problems.push(`vault.auth must set one of ${AUTH_METHODS.join(', ')}`);
    return;
  }
  const set = Object.keys(auth).filter((k) => auth[k] != null);
  const unsupported = set.filter((k) => (UNSUPPORTED_AUTH as readonly string[]).includes(k));
  for (const k of unsupported) problems.push(`vault.auth.${k} is not supported by ESI (use ${AUTH_METHODS.join(', ')})`);
  const known = set.filter((k) => (AUTH_METHODS as readonly string[]).includes(k));
  if (known.length === 0 && unsupported.length === 0) problems.push(`vault.auth must set one of ${AUTH_METHODS.join(', ')}`);
  if (known.length > 1) problems.push(`vault.auth must set exactly one method, found ${known.join(', ')}`);
  const methods = { appRole: checkAppRole, kubernetes: checkKubernetes, jwt: checkJwt } as const;
  for (const [name, check] of Object.entries(methods)) {
    const v = auth[name];
    if (v == null) continue;
    if (isObject(v)) check(v, problems);
    else problems.push(`vault.auth.${name} must be an object`);
  }
}

function checkHeaders(headers: unknown, problems: string[]): void {
  if (headers === undefined) return;
  if (!isObject(headers)) {
    problems.push('vault.headers must be a map of header names to values');
    return;
  }
  for (const [k, v] of Object.entries(headers)) {
    if (typeof v !== 'string') problems.push(`vault.headers["${k}"] must be a string`);
    if (RESERVED_HEADERS.includes(k.toLowerCase())) problems.push(`vault.headers may not set ${k} (the provider sets it)`);
  }
}

function checkTls(tls: unknown, problems: string[]): void {
  if (tls === undefined) return;
  if (!isObject(tls)) {
    problems.push('vault.tls must be an object');
    return;
  }
  if ((tls.certSecretRef === undefined) !== (tls.keySecretRef === undefined)) {
    problems.push('vault.tls needs both certSecretRef and keySecretRef for a client certificate');
  }
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['vault must be an object'];
  const p = spec as Partial<VaultProvider>;
  const problems = fieldProblems('vault', FIELDS, spec);
  checkOptionalString(p.path, 'vault.path', problems);
  if (p.version !== undefined && p.version !== 'v1' && p.version !== 'v2') problems.push(`vault.version must be v1 or v2, got "${String(p.version)}"`);
  checkOptionalString(p.namespace, 'vault.namespace', problems);
  checkAuth(p.auth, problems);
  checkHeaders(p.headers, problems);
  checkTls(p.tls, problems);
  const authNs = isObject(p.auth) ? p.auth.namespace : undefined;
  if (authNs !== undefined && authNs !== (p.namespace ?? '')) {
    problems.push('vault.auth.namespace (logging in to another namespace) is not supported by ESI, which logs in within vault.namespace; remove it or set it to vault.namespace');
  }
  return problems;
}

/** The same rules for a spec served by this implementation under another provider key
 *  (`openBao`): every message names the fields under `name` (never a URL's host) and offers
 *  only the auth `methods` that kind has. */
export function validateSpecAs(name: string, spec: unknown, methods: readonly AuthMethod[] = AUTH_METHODS): string[] {
  const all = AUTH_METHODS.join(', ');
  return validateSpec(spec).map((p) => p.replace(/(^|[\s(])vault(?=[.\s])/g, `$1${name}`).replaceAll(all, methods.join(', ')));
}

// The one rule for a dynamic-secret engine path (a Vault/OpenBao path a mint is sent to):
// the webhook applies it to `esi.dev/dynamic-<name>` (src/pod-contract/annotations.ts), the
// agent and the webhook to the agent configuration (src/agent-config/check.ts), and the vault
// provider's leases.generate (src/providers/vault/leases.ts) to every mint, which is how the
// reconciler's VaultDynamicSecret and the agent reach a store. The path is appended to
// `<server>/v1/`, and Vault reads a leading segment as a namespace (`ns1/sys/...` is the
// sys/ of namespace ns1), so the rule refuses the spellings that would leave the secrets
// engines: a system or auth segment anywhere, climbing segments, and anything a URL parser
// or a proxy reads differently (scheme, query, fragment, backslash, percent-encoding,
// control characters). No imports: the webhook's start closure stays small.

/** The longest engine path accepted (the agent configuration's own bound). */
const MAX_DYNAMIC_PATH = 1024;

/** What a mint returns: the data (default), the auth section, or the whole response. */
export type DynamicResult = 'data' | 'auth' | 'raw';

/** Why `path` is not an engine path ESI mints at, or undefined. */
export function dynamicPathProblem(path: string, result: DynamicResult = 'data'): string | undefined {
  if (typeof path !== 'string') return 'must be a string';
  if (path.length > MAX_DYNAMIC_PATH) return `is longer than ${MAX_DYNAMIC_PATH} characters`;
  // C0, DEL, C1 and the Unicode line separators: a log line or a proxy could split on them.
  for (const ch of path) {
    const c = ch.codePointAt(0)!;
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029) return 'contains a control character';
  }
  if (path.includes('\\')) return 'contains a backslash (segments are separated by "/")';
  // Any percent-encoding: %2e%2e and %2f climb once decoded, %25 hides a second round.
  if (path.includes('%')) return 'contains percent-encoding ("%"); write the path as Vault names it';
  if (/[?#]/.test(path)) return 'contains "?" or "#" (a query or fragment is not part of an engine path)';
  if (path.includes('://') || /^[a-z][a-z0-9+.-]*:/i.test(path)) return 'is a URL, not a path relative to the store\'s server';
  const p = trimSlashes(path);
  const segments = p.split('/');
  if (!p || segments.some((s) => s === '' || s === '.' || s === '..')) return 'must be relative, with segments separated by single slashes and no "." or ".." segment';
  // Any position: after a Vault namespace prefix (`ns1/sys/...`) it is still the system backend.
  if (segments.some((s) => s.toLowerCase() === 'sys')) return 'has a "sys" segment: a system path, not a secrets engine';
  if (result === 'data' && segments.some((s) => s.toLowerCase() === 'auth')) {
    return 'has an "auth" segment: an auth path, not a secrets engine (a generator reads a token there with resultType Auth or Raw)';
  }
  return undefined;
}

/** `path` without its leading and trailing slashes (ESO's manifests write `/pki/issue/x`). */
export function trimSlashes(path: string): string {
  let a = 0;
  let b = path.length;
  while (a < b && path[a] === '/') a++;
  while (b > a && path[b - 1] === '/') b--;
  return path.slice(a, b);
}

/** The engine path as sent (slashes trimmed); throws Error naming what is wrong. */
export function dynamicPath(path: string, result: DynamicResult = 'data'): string {
  const problem = dynamicPathProblem(path, result);
  if (problem) throw new Error(`dynamic secret path ${JSON.stringify(String(path).slice(0, 128))} ${problem}`);
  return trimSlashes(path);
}

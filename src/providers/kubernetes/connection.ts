// Where the Kubernetes API is and who the provider is to it: server URL, the CA that
// verifies it (TLS is always verified) and the credentials, resolved from the store spec.
// ESI never mints tokens: `auth.serviceAccount` and no `auth` both mean the pod's own
// projected token, read again on every request because the kubelet rotates it.
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { rootCertificates } from 'node:tls';
import type { KubernetesProvider } from '../../api/types.js';
import type { AddressPolicy } from '../../egress/policy.js';
import { ProviderError, type ProviderContext, type SecretKeySelector } from '../types.js';
import { caBundlePem } from '../spec-checks.js';
import { parseKubeconfig } from './kubeconfig.js';

/** The CA of the cluster a pod runs in, mounted by the kubelet with the default token. */
const IN_CLUSTER_CA = '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt';

export interface Connection {
  /** Base URL of the API server, without a trailing slash. */
  url: string;
  /** PEM certificates to trust; undefined = Node's built-in roots. */
  ca?: string[];
  servername?: string;
  cert?: Buffer;
  key?: Buffer;
  /** The bearer token for one request, read when called; undefined = none. */
  token?: () => Promise<string>;
  /** Who the requests authenticate as, for error messages. */
  identity: string;
  /** Said with a 401: what to check. */
  authHint: string;
  /** The egress policy for `url` when the spec or its kubeconfig names it; undefined for
   *  the in-cluster API server, which is the operator's, not the tenant's, address. */
  policy?: AddressPolicy;
}

/** A ConfigMap key the webhook mounted into the agent (`caProvider.type: ConfigMap`).
 *  Not part of ProviderContext yet: an embedder that can read them provides it. */
export type ConfigMapReader = { readConfigMap?(ref: SecretKeySelector): Promise<Uint8Array> };

const PEM = '-----BEGIN CERTIFICATE-----';

function pemOf(storeId: string, bytes: Uint8Array | string, what: string): string {
  const text = typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('utf8');
  if (!text.includes(PEM)) throw new ProviderError('InvalidSpec', storeId, `${what} holds no PEM certificate`);
  return text;
}

/** `caBundle` is base64 of PEM (ESO); a raw PEM is accepted too (src/providers/spec-checks.ts). */
function decodeCaBundle(storeId: string, caBundle: string): string {
  const pem = caBundlePem(caBundle);
  if (!pem) throw new ProviderError('InvalidSpec', storeId, 'kubernetes.server.caBundle holds no PEM certificate');
  return pem;
}

function inClusterUrl(storeId: string): string {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT ?? '443';
  if (!host) {
    throw new ProviderError('InvalidSpec', storeId, 'kubernetes.server.url is not set and KUBERNETES_SERVICE_HOST is unknown (not running in a pod)');
  }
  return `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

async function inClusterCa(storeId: string, required: boolean): Promise<string | undefined> {
  try {
    return pemOf(storeId, await readFile(IN_CLUSTER_CA), IN_CLUSTER_CA);
  } catch (err) {
    if (!required) return undefined;
    if (err instanceof ProviderError) throw err;
    throw new ProviderError(
      'InvalidSpec',
      storeId,
      `no CA to verify the in-cluster API server: ${IN_CLUSTER_CA} is not mounted (${(err as NodeJS.ErrnoException).code ?? 'error'}); set kubernetes.server.caBundle or caProvider`,
    );
  }
}

async function resolveCa(ctx: ProviderContext, spec: KubernetesProvider): Promise<string[] | undefined> {
  const server = spec.server ?? {};
  if (server.caBundle) return [decodeCaBundle(ctx.storeId, server.caBundle)];
  const cp = server.caProvider;
  if (cp) {
    const ref = { name: cp.name, key: cp.key ?? '', ...(cp.namespace ? { namespace: cp.namespace } : {}) };
    const what = `kubernetes.server.caProvider (${cp.type} "${cp.name}", key "${ref.key}")`;
    if (cp.type === 'Secret') return [pemOf(ctx.storeId, await ctx.readCredential(ref), what)];
    const reader = (ctx as ProviderContext & ConfigMapReader).readConfigMap;
    if (!reader) {
      throw new ProviderError('Unsupported', ctx.storeId, `${what}: this process cannot read mounted ConfigMaps; use caBundle or a caProvider of type Secret`);
    }
    return [pemOf(ctx.storeId, await reader(ref), what)];
  }
  // No CA configured: the in-cluster CA for the in-cluster server; for an explicit
  // URL the in-cluster CA when mounted plus the public roots.
  if (!server.url) return [(await inClusterCa(ctx.storeId, true))!];
  const local = await inClusterCa(ctx.storeId, false);
  return local ? [...rootCertificates, local] : undefined;
}

function certSubject(cert: Buffer): string {
  try {
    const cn = /(?:^|\n)CN=([^\n]*)/.exec(new X509Certificate(cert).subject)?.[1];
    return cn ? `the client certificate of "${cn}"` : 'the client certificate';
  } catch {
    return 'the client certificate';
  }
}

async function fromKubeconfig(ctx: ProviderContext, ref: SecretKeySelector): Promise<Connection> {
  const text = Buffer.from(await ctx.readCredential(ref)).toString('utf8');
  const kc = await parseKubeconfig(ctx.storeId, text);
  const conn: Connection = {
    url: kc.server.replace(/\/+$/, ''),
    ...(ctx.addresses ? { policy: ctx.addresses } : {}),
    identity: kc.cert && !kc.token ? certSubject(kc.cert) : `user "${kc.user}" of the kubeconfig in Secret "${ref.name}"`,
    authHint: `check the credentials of user "${kc.user}" in the kubeconfig (Secret "${ref.name}", key "${ref.key}")`,
  };
  if (kc.ca) conn.ca = [pemOf(ctx.storeId, kc.ca, 'certificate-authority-data of the kubeconfig in authRef')];
  if (kc.servername) conn.servername = kc.servername;
  if (kc.cert && kc.key) Object.assign(conn, { cert: kc.cert, key: kc.key });
  if (kc.token) {
    const token = kc.token;
    conn.token = async () => token;
  }
  return conn;
}

/** The egress policy, when the spec names the server (the in-cluster one is the operator's). */
const specPolicy = (ctx: ProviderContext, spec: KubernetesProvider): { policy?: AddressPolicy } =>
  (spec.server?.url && ctx.addresses ? { policy: ctx.addresses } : {});

/** Resolves the store spec into a connection. Reads credentials (mounted files in the
 *  agent); call again to pick up rotated ones. */
export async function resolveConnection(ctx: ProviderContext, spec: KubernetesProvider): Promise<Connection> {
  if (spec.authRef) return fromKubeconfig(ctx, { ...spec.authRef, key: spec.authRef.key ?? '' });
  const url = (spec.server?.url ?? inClusterUrl(ctx.storeId)).replace(/\/+$/, '');
  const ca = await resolveCa(ctx, spec);
  const auth = spec.auth ?? {};
  const base = { url, ...(ca ? { ca } : {}), ...specPolicy(ctx, spec) };
  if (auth.token?.bearerToken) {
    const ref = { ...auth.token.bearerToken, key: auth.token.bearerToken.key ?? '' };
    return {
      ...base,
      // Re-read on every request: a mounted Secret is updated in place.
      token: async () => Buffer.from(await ctx.readCredential(ref)).toString('utf8').trim(),
      identity: `the token in Secret "${ref.name}" (key "${ref.key}")`,
      authHint: `check the token in Secret "${ref.name}" (key "${ref.key}") is valid and not expired`,
    };
  }
  if (auth.cert?.clientCert && auth.cert.clientKey) {
    const certRef = { ...auth.cert.clientCert, key: auth.cert.clientCert.key ?? '' };
    const keyRef = { ...auth.cert.clientKey, key: auth.cert.clientKey.key ?? '' };
    const [cert, key] = await Promise.all([ctx.readCredential(certRef), ctx.readCredential(keyRef)]);
    return {
      ...base,
      cert: Buffer.from(cert),
      key: Buffer.from(key),
      identity: certSubject(Buffer.from(cert)),
      authHint: `check the client certificate in Secret "${certRef.name}" is signed by the API server's client CA and not expired`,
    };
  }
  const audience = auth.serviceAccount?.audiences?.[0];
  return {
    ...base,
    token: () => ctx.serviceAccountToken(audience),
    identity: "the pod's service account",
    authHint: `check the pod's projected token${audience ? ` (audience "${audience}")` : ''} is accepted by this API server and not expired`,
  };
}

// The `vault` provider (ESO's `spec.provider.vault`): HashiCorp Vault and OpenBao, KV v1
// and v2, token / appRole / kubernetes / jwt auth, namespaces, custom CA and client
// certificates. Built on node-vault; loaded only by processes whose stores use it.
import type { SecretKeySelector as ApiSelector, VaultProvider } from '../../api/types.js';
import { defineProvider } from '../define.js';
import { caBundlePem } from '../spec-checks.js';
import { ProviderError, type ProviderContext, type SecretKeySelector } from '../types.js';
import { credential, loginFor, TokenSource } from './auth.js';
import { VaultClient } from './client.js';
import { VaultHttp } from './http.js';
import { KvLayout } from './kv.js';
import { meta } from './meta.js';
import { validateSpec } from './spec.js';

export { validateSpec };
export { VaultClient } from './client.js';

const selector = (s: ApiSelector): SecretKeySelector => ({ name: s.name, key: s.key ?? '', ...(s.namespace ? { namespace: s.namespace } : {}) });

async function pem(ctx: ProviderContext, ref: ApiSelector, what: string, from: 'Secret' | 'ConfigMap' = 'Secret'): Promise<string> {
  let raw: Uint8Array;
  if (from === 'ConfigMap') {
    if (!ctx.readConfigMap) throw new ProviderError('InvalidSpec', ctx.storeId, `${what}: ConfigMap ${ref.name}/${ref.key} cannot be read here`);
    raw = await ctx.readConfigMap(selector(ref));
  } else {
    raw = await ctx.readCredential(selector(ref));
  }
  const v = Buffer.from(raw).toString('utf8');
  if (!v.trim()) throw new ProviderError('InvalidSpec', ctx.storeId, `${what} (${ref.name}/${ref.key}) is empty`);
  return v;
}

/** The CA bundle that verifies the server: caBundle (base64 PEM, or raw PEM) and/or caProvider (a
 *  Secret key mounted like a credential, or a ConfigMap key). */
async function caOf(ctx: ProviderContext, spec: VaultProvider): Promise<string | undefined> {
  const parts: string[] = [];
  // A validated spec's caBundle holds a certificate (src/providers/spec-checks.ts).
  const bundle = caBundlePem(spec.caBundle);
  if (bundle) parts.push(bundle);
  if (spec.caProvider) parts.push(await pem(ctx, spec.caProvider, 'vault.caProvider', spec.caProvider.type));
  return parts.length ? parts.join('\n') : undefined;
}

/** Builds a client from a validated spec; also serves `openBao` (src/providers/openbao/). */
export async function connect(ctx: ProviderContext, spec: VaultProvider): Promise<VaultClient> {
  if (spec.readYourWrites) {
    ctx.logger.warn('vault.readYourWrites is not implemented by ESI (Vault Enterprise performance standbys); reads may lag writes');
  }
  const ca = await caOf(ctx, spec);
  const cert = spec.tls?.certSecretRef ? await pem(ctx, spec.tls.certSecretRef, 'vault.tls.certSecretRef') : undefined;
  const key = spec.tls?.keySecretRef ? await pem(ctx, spec.tls.keySecretRef, 'vault.tls.keySecretRef') : undefined;
  const http = new VaultHttp({
    server: spec.server,
    timeoutMs: ctx.timeoutMs,
    ...(spec.namespace ? { namespace: spec.namespace } : {}),
    ...(ca ? { ca } : {}),
    ...(cert && key ? { cert, key } : {}),
    ...(spec.headers ? { headers: spec.headers } : {}),
    ...(spec.forwardInconsistent ? { forwardInconsistent: true } : {}),
    ...(ctx.addresses ? { policy: ctx.addresses } : {}),
    quoteErrors: ctx.quoteStoreErrors ?? true,
  });
  const auth = spec.auth!;
  const login = loginFor(ctx, http, auth);
  const tokenRef = auth.tokenSecretRef;
  const tokens = new TokenSource({
    storeId: ctx.storeId,
    http,
    logger: ctx.logger,
    ...(login ? { login } : {}),
    staticToken: () => credential(ctx, tokenRef!, 'vault.auth.tokenSecretRef'),
  });
  return new VaultClient(ctx.storeId, { http, tokens, kv: new KvLayout(spec.path, spec.version ?? 'v2'), logger: ctx.logger });
}

export const provider = defineProvider(meta, connect);

export default provider;

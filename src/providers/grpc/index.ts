// The `grpc` provider (an ESI addition, docs/providers/grpc.md): an
// out-of-tree secret store reached over
// gRPC, implementing the `SecretsServer` service of secrets.proto (next to this file).
// ESI ships a reference plugin in examples/grpc-plugin; docs/providers/grpc.md is the
// contract for anyone writing their own.
//
//   spec.provider.grpc:
//     url: plugin.esi-system.svc:50051     # TLS by default; http:// for plaintext
//     tlsSecretRef: {name: plugin-tls}      # ca.crt (server CA), tls.crt + tls.key (mTLS)
import type { GRPCProvider } from '../../api/types.js';
import { defineProvider } from '../define.js';
import { ProviderError } from '../types.js';
import { EgressError } from '../../egress/connect.js';
import { openGrpcClient } from '../../egress/grpc.js';
import { CHANNEL_OPTIONS, GrpcSecretsClient } from './client.js';
import { describeStore } from './contract.js';
import { meta } from './meta.js';
import { parseUrl, validateSpec } from './spec.js';
import { channelCredentials } from './tls.js';

export const provider = defineProvider<GRPCProvider>(meta, async (ctx, spec) => {
  const endpoint = parseUrl(spec.url);
  if (typeof endpoint === 'string') throw new ProviderError('InvalidSpec', ctx.storeId, endpoint);
  const channel = await channelCredentials(ctx, endpoint, spec.tlsSecretRef);
  const store = new TextEncoder().encode(JSON.stringify(describeStore(ctx.storeId, { ...spec, url: endpoint.display })));
  let client;
  try {
    client = await openGrpcClient(endpoint, channel.credentials, CHANNEL_OPTIONS, ctx.addresses);
  } catch (err) {
    throw new ProviderError(err instanceof EgressError ? err.code : 'Unreachable', ctx.storeId, `grpc.url "${endpoint.display}": ${(err as Error).message}`);
  }
  ctx.logger.debug({ target: endpoint.target, tls: endpoint.tls, mtls: channel.clientCert, privateCa: channel.privateCa }, 'grpc plugin client created');
  return new GrpcSecretsClient({
    client,
    storeId: ctx.storeId,
    namespace: ctx.namespace,
    target: endpoint.target,
    url: endpoint.display,
    channel,
    tls: endpoint.tls,
    ...(spec.tlsSecretRef?.name ? { tlsSecret: spec.tlsSecretRef.name } : {}),
    store,
    timeoutMs: ctx.timeoutMs,
    logger: ctx.logger,
    quoteErrors: ctx.quoteStoreErrors ?? true,
  });
});

export { validateSpec };
export default provider;

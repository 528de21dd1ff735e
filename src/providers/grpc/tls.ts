// Channel credentials from `tlsSecretRef`. The webhook mounts the whole referenced Secret
// into the agent at `<credentialsDir>/<name>/`, so the keys are read by name:
//   ca.crt                      the CA that signed the plugin's serving certificate
//                               (trusted instead of the system roots)
//   tls.crt + tls.key           ESI's client certificate and key (mTLS)
// No tlsSecretRef: TLS verified against the system roots. `http://` url: plaintext.
import { credentials, type ChannelCredentials } from '@grpc/grpc-js';
import { ProviderError, type ProviderContext } from '../types.js';
import type { Endpoint } from './spec.js';

export interface TlsSetup {
  credentials: ChannelCredentials;
  /** A client certificate is presented (mTLS). */
  clientCert: boolean;
  /** A private CA from ca.crt is trusted (instead of the system roots). */
  privateCa: boolean;
}

async function optional(ctx: ProviderContext, name: string, key: string, namespace?: string): Promise<Buffer | undefined> {
  try {
    const v = await ctx.readCredential({ name, key, ...(namespace ? { namespace } : {}) });
    return v.length > 0 ? Buffer.from(v) : undefined;
  } catch {
    // Absent from the Secret (or the Secret is not mounted): decided below.
    return undefined;
  }
}

function pemProblem(buf: Buffer | undefined, key: string, marker: RegExp): string | undefined {
  if (!buf) return undefined;
  return marker.test(buf.toString('latin1')) ? undefined : `${key} is not PEM (${marker.source.replace(/\\/g, '')} not found)`;
}

export async function channelCredentials(ctx: ProviderContext, endpoint: Endpoint, ref?: { name: string; namespace?: string }): Promise<TlsSetup> {
  if (!endpoint.tls) return { credentials: credentials.createInsecure(), clientCert: false, privateCa: false };
  if (!ref) return { credentials: credentials.createSsl(), clientCert: false, privateCa: false };
  const [ca, cert, key] = await Promise.all(
    ['ca.crt', 'tls.crt', 'tls.key'].map((k) => optional(ctx, ref.name, k, ref.namespace)),
  );
  const secret = `Secret "${ref.name}"`;
  if (!ca && !cert && !key) {
    throw new ProviderError('InvalidSpec', ctx.storeId, `grpc.tlsSecretRef: ${secret} holds none of ca.crt, tls.crt, tls.key (or it is not mounted into the agent)`);
  }
  if (!cert !== !key) {
    throw new ProviderError('InvalidSpec', ctx.storeId, `grpc.tlsSecretRef: ${secret} has ${cert ? 'tls.crt but no tls.key' : 'tls.key but no tls.crt'}; mTLS needs both`);
  }
  const problems = [
    pemProblem(ca, 'ca.crt', /-----BEGIN CERTIFICATE-----/),
    pemProblem(cert, 'tls.crt', /-----BEGIN CERTIFICATE-----/),
    pemProblem(key, 'tls.key', /-----BEGIN [A-Z ]*PRIVATE KEY-----/),
  ].filter(Boolean);
  if (problems.length > 0) throw new ProviderError('InvalidSpec', ctx.storeId, `grpc.tlsSecretRef: ${secret}: ${problems.join('; ')}`);
  try {
    return { credentials: credentials.createSsl(ca ?? null, key ?? null, cert ?? null), clientCert: !!cert, privateCa: !!ca };
  } catch (err) {
    // OpenSSL's reason (e.g. "key values mismatch", "no start line") names no content.
    const reason = String((err as Error).message ?? err).split('\n')[0]!.replace(/^error:[0-9A-F]+:/, '').slice(0, 160);
    throw new ProviderError('InvalidSpec', ctx.storeId, `grpc.tlsSecretRef: ${secret}: cannot load the TLS material (${reason})`);
  }
}

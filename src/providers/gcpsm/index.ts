// The `gcpsm` provider: GCP Secret Manager through the official client
// (@google-cloud/secret-manager, gRPC). Store spec as ESO v1: `projectID`, `location`
// (regional secrets), `auth.secretRef.secretAccessKeySecretRef` (service-account key) or
// `auth.workloadIdentity` (the pod's token exchanged at STS), or no auth (ADC).
// `SECRET_MANAGER_EMULATOR_HOST=host:port` in the process environment points every gcpsm
// store at an emulator: plaintext gRPC, no credentials sent (tests and local dev only).
import { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { credentials } from '@grpc/grpc-js';
import type { GCPSMProvider } from '../../api/types.js';
import { defineProvider } from '../define.js';
import { ProviderError, type ProviderContext, type SecretsClient } from '../types.js';
import { authMode, storeCredentials, type AuthOverrides } from './auth.js';
import { GcpsmClient } from './client.js';
import { DEFAULT_POLICY } from './errors.js';
import { meta } from './meta.js';
import { apiEndpoint, EMULATOR_ENV, emulatorAddress } from './names.js';
import { validateSpec } from './spec.js';

type ClientOptions = NonNullable<ConstructorParameters<typeof SecretManagerServiceClient>[0]>;

/** Project of the store: spec, then the workload identity's cluster project, then the
 *  key file's, then ADC (metadata server). */
async function resolveProject(ctx: ProviderContext, spec: GCPSMProvider, fromCreds: string | undefined, sm: SecretManagerServiceClient): Promise<string> {
  const known = spec.projectID || spec.auth?.workloadIdentity?.clusterProjectID || fromCreds;
  if (known) return known;
  if (authMode(spec) === 'adc') {
    const timeout = new Promise<undefined>((r) => setTimeout(() => r(undefined), ctx.timeoutMs).unref());
    const found = await Promise.race([sm.getProjectId().catch(() => undefined), timeout]);
    if (found) return found;
  }
  throw new ProviderError('InvalidSpec', ctx.storeId, 'gcpsm.projectID is required (it could not be derived from the credentials)');
}

/** Builds a client; `overrides` are test seams (STS endpoint, emulator address). */
async function connect(ctx: ProviderContext, spec: GCPSMProvider, overrides: AuthOverrides & { emulatorHost?: string }): Promise<SecretsClient> {
  let emulator: ReturnType<typeof emulatorAddress>;
  try {
    emulator = emulatorAddress(overrides.emulatorHost ?? process.env[EMULATOR_ENV]);
  } catch (err) {
    throw new ProviderError('InvalidSpec', ctx.storeId, (err as Error).message);
  }
  // Built in emulator mode too, so a missing or malformed credential still shows.
  const creds = await storeCredentials(ctx, spec, overrides);
  // A project the store names spares ADC its own lookup, which for a federated identity
  // asks Cloud Resource Manager and fails without resourcemanager.projects.get.
  const opts: ClientOptions = { fallback: false, ...(spec.projectID ? { projectId: spec.projectID } : {}) };
  if (emulator) {
    ctx.logger.warn({ endpoint: `${emulator.host}:${emulator.port}` }, `gcpsm: ${EMULATOR_ENV} is set, using a plaintext emulator without credentials`);
    Object.assign(opts, { apiEndpoint: emulator.host, port: emulator.port, sslCreds: credentials.createInsecure(), universeDomain: 'googleapis.com' });
  } else {
    Object.assign(opts, { apiEndpoint: apiEndpoint(spec.location), port: 443 });
    if (creds.client) opts.authClient = creds.client;
  }
  const sm = new SecretManagerServiceClient(opts);
  try {
    const projectID = await resolveProject(ctx, spec, creds.projectID, sm);
    return new GcpsmClient(ctx, {
      sm,
      scope: { projectID, location: spec.location || undefined },
      policy: { timeoutMs: ctx.timeoutMs, ...DEFAULT_POLICY },
      auth: emulator ? undefined : (creds.client ?? sm.auth),
    });
  } catch (err) {
    await sm.close().catch(() => undefined);
    throw err;
  }
}

export const provider = defineProvider<GCPSMProvider>(meta, (ctx, spec) => connect(ctx, spec, {}));

/** Builds a client; `overrides` are test seams (STS endpoint, emulator address). */
export function newGcpsmClient(ctx: ProviderContext, overrides: AuthOverrides & { emulatorHost?: string } = {}): Promise<SecretsClient> {
  return defineProvider<GCPSMProvider>(meta, (c, spec) => connect(c, spec, overrides)).newClient(ctx);
}

export { validateSpec };
export default provider;

// The `gcpsm` provider: GCP Secret Manager through the official client
// (@google-cloud/secret-manager, gRPC). Store spec as ESO v1: `projectID`, `location`
// (regional secrets), `auth.secretRef.secretAccessKeySecretRef` (service-account key) or
// `auth.workloadIdentity` (the pod's token exchanged at STS), or no auth (ADC).
// `SECRET_MANAGER_EMULATOR_HOST=host:port` in the process environment points every gcpsm
// store at an emulator: plaintext gRPC, no credentials sent (tests and local dev only).
import { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { credentials } from '@grpc/grpc-js';
import type { GCPSMProvider } from '../../api/types.js';
import { ProviderError, type Capabilities, type Provider, type ProviderContext, type SecretsClient } from '../types.js';
import { authMode, federationPlan, storeCredentials, type AuthOverrides } from './auth.js';
import { GcpsmClient } from './client.js';
import { DEFAULT_POLICY } from './errors.js';
import { apiEndpoint, EMULATOR_ENV, emulatorAddress } from './names.js';

const capabilities: Capabilities = {
  read: true,
  write: true,
  find: { name: true, tags: true, path: true },
  versions: true,
};

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const optString = (v: unknown): boolean => v === undefined || typeof v === 'string';

function validateAuth(auth: unknown, projectID: unknown): string[] {
  if (auth === undefined) return [];
  if (!isObj(auth)) return ['gcpsm.auth must be an object'];
  const problems: string[] = [];
  const key = isObj(auth.secretRef) ? auth.secretRef.secretAccessKeySecretRef : undefined;
  if (auth.secretRef !== undefined && !(isObj(key) && typeof key.name === 'string' && key.name && typeof key.key === 'string' && key.key)) {
    problems.push('gcpsm.auth.secretRef.secretAccessKeySecretRef needs name and key');
  }
  const wi = auth.workloadIdentity;
  if (wi !== undefined) {
    if (!isObj(wi) || !isObj(wi.serviceAccountRef) || typeof wi.serviceAccountRef.name !== 'string' || !wi.serviceAccountRef.name) {
      problems.push('gcpsm.auth.workloadIdentity.serviceAccountRef.name is required');
    } else {
      const plan = federationPlan(wi as never, typeof projectID === 'string' ? projectID : undefined);
      if (Array.isArray(plan)) problems.push(`gcpsm.auth.workloadIdentity needs ${plan.join(', ')} (or serviceAccountRef.audiences[0] naming an IAM workload identity pool provider)`);
    }
  }
  if (auth.secretRef !== undefined && wi !== undefined) problems.push('gcpsm.auth: set secretRef or workloadIdentity, not both');
  return problems;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObj(spec)) return ['gcpsm must be an object'];
  const problems: string[] = [];
  if (!optString(spec.projectID)) problems.push('gcpsm.projectID must be a string');
  if (!optString(spec.location) || (typeof spec.location === 'string' && !/^[a-z0-9-]*$/.test(spec.location))) {
    problems.push('gcpsm.location must be a region name such as europe-west1');
  }
  return [...problems, ...validateAuth(spec.auth, spec.projectID)];
}

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
export async function newGcpsmClient(ctx: ProviderContext, overrides: AuthOverrides & { emulatorHost?: string } = {}): Promise<SecretsClient> {
  const problems = validateSpec(ctx.spec);
  if (problems.length > 0) throw new ProviderError('InvalidSpec', ctx.storeId, problems.join('; '));
  const spec = ctx.spec as GCPSMProvider;
  let emulator: ReturnType<typeof emulatorAddress>;
  try {
    emulator = emulatorAddress(overrides.emulatorHost ?? process.env[EMULATOR_ENV]);
  } catch (err) {
    throw new ProviderError('InvalidSpec', ctx.storeId, (err as Error).message);
  }
  // Built in emulator mode too, so a missing or malformed credential still shows.
  const creds = await storeCredentials(ctx, spec, overrides);
  const opts: ClientOptions = { fallback: false };
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

export const provider: Provider = {
  name: 'gcpsm',
  capabilities,
  validateSpec,
  newClient: (ctx) => newGcpsmClient(ctx),
};

export default provider;

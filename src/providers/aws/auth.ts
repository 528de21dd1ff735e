// AWS credentials of one store, as ESO's v1 `aws` provider defines them, with one
// difference forced by ESI's pod-identity model (see docs/providers/aws.md):
//
// - `auth.secretRef`: static keys read from the credential files the webhook mounted
//   into the agent (accessKeyID, secretAccessKey, optional sessionToken); then
//   `additionalRoles` are assumed in order and finally `role` (with externalID and
//   session tags), each with the previous credentials.
// - `auth.jwt` or no `auth`: STS AssumeRoleWithWebIdentity of `role` with the pod's own
//   projected service-account token (audience `sts.amazonaws.com` unless the
//   serviceAccountRef names one); then `additionalRoles` in order. ESO takes the web
//   identity role from the ServiceAccount's `eks.amazonaws.com/role-arn` annotation;
//   the agent cannot read ServiceAccounts, so the store names it in `role`.
//
// - no `auth` in the reconciler, when the operator lends the controller its identity
//   (ctx.environmentIdentity) and the controller runs with EKS Pod Identity
//   (POD_IDENTITY_ENV): the node agent's credentials, as ESO's default chain finds them;
//   then `additionalRoles` and `role` are assumed in turn with AssumeRole, as ESO does.
//   With IRSA instead (IRSA_ENV: the role of the controller's ServiceAccount annotation and
//   its token file), that role is taken with AssumeRoleWithWebIdentity first, the same way.
//
// The STS client is imported only when a role is assumed. Temporary credentials are
// cached and refreshed before they expire; the token is re-read on every refresh
// (the kubelet rotates it).
import type * as StsModule from '@aws-sdk/client-sts';
import type { AWSProvider } from '../../api/types.js';
import { ProviderError, type ProviderContext } from '../types.js';
import { toProviderError } from '../errors.js';
import { classifyAws } from './errors.js';
import {
  cachedCredentials,
  callOptions,
  commonConfig,
  noCredentials,
  type AwsCredentialIdentity,
  type AwsCredentialIdentityProvider,
} from './sdk.js';
import { readFile } from 'node:fs/promises';
import { endpointFromEnv, irsaFromEnv, podIdentityFromEnv, ROLE_REQUIRED, STS_AUDIENCE, usesWebIdentity } from './spec.js';

export interface Credentials {
  provider: AwsCredentialIdentityProvider;
  /** STS GetCallerIdentity with the final credentials: proves they work, reads nothing. */
  check(): Promise<void>;
  close(): void;
}

type Sts = typeof StsModule;

/** RoleSessionName: `esi-<namespace>`, as CloudTrail shows it ([\w+=,.@-], ≤ 64). */
function sessionName(namespace: string): string {
  return `esi-${namespace}`.replace(/[^\w+=,.@-]/g, '-').slice(0, 64);
}

async function staticKeys(ctx: ProviderContext, spec: AWSProvider): Promise<AwsCredentialIdentity> {
  const ref = spec.auth!.secretRef!;
  const read = async (sel: { name: string; key?: string; namespace?: string } | undefined, what: string) => {
    if (!sel?.key) throw new ProviderError('InvalidSpec', ctx.storeId, `aws.auth.secretRef.${what} is required`);
    return Buffer.from(await ctx.readCredential({ name: sel.name, key: sel.key, namespace: sel.namespace })).toString('utf8').trim();
  };
  const accessKeyId = await read(ref.accessKeyIDSecretRef, 'accessKeyIDSecretRef');
  const secretAccessKey = await read(ref.secretAccessKeySecretRef, 'secretAccessKeySecretRef');
  const sessionToken = ref.sessionTokenSecretRef ? await read(ref.sessionTokenSecretRef, 'sessionTokenSecretRef') : undefined;
  if (!accessKeyId || !secretAccessKey) throw new ProviderError('AuthFailed', ctx.storeId, 'the mounted AWS access key is empty');
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

function fromStsCredentials(c: { AccessKeyId?: string; SecretAccessKey?: string; SessionToken?: string; Expiration?: Date } | undefined): AwsCredentialIdentity {
  if (!c?.AccessKeyId || !c.SecretAccessKey) throw new Error('STS returned no credentials');
  return { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.SessionToken, expiration: c.Expiration };
}

interface Step {
  role: string;
  /** externalID and session tags go with the store's own `role` only. */
  withOptions: boolean;
}

/** The roles assumed with AssumeRole, in order (web identity consumes `role` itself). */
function roleSteps(spec: AWSProvider, webIdentity: boolean): Step[] {
  const steps = (spec.additionalRoles ?? []).map((role) => ({ role, withOptions: false }));
  if (!webIdentity && spec.role) steps.push({ role: spec.role, withOptions: true });
  return steps;
}

/** Builds STS clients for one store and remembers them for close(). */
class StsClients {
  readonly all: StsModule.STSClient[] = [];
  constructor(readonly sts: Sts, private readonly ctx: ProviderContext, private readonly spec: AWSProvider) {}

  make(credentials: AwsCredentialIdentityProvider): StsModule.STSClient {
    const c = new this.sts.STSClient(commonConfig({
      region: this.spec.region, service: 'sts', endpoint: endpointFromEnv('sts'), credentials, timeoutMs: this.ctx.timeoutMs,
    }));
    this.all.push(c);
    return c;
  }

  async call<T>(client: StsModule.STSClient, op: string, command: unknown): Promise<T> {
    try {
      return (await client.send(command as never, callOptions(this.ctx.timeoutMs))) as T;
    } catch (err) {
      throw toProviderError(err, { storeId: this.ctx.storeId, op }, classifyAws);
    }
  }
}

function webIdentityCredentials(s: StsClients, ctx: ProviderContext, spec: AWSProvider): AwsCredentialIdentityProvider {
  const client = s.make(noCredentials);
  const audience = spec.auth?.jwt?.serviceAccountRef?.audiences?.[0] ?? STS_AUDIENCE;
  return async () => {
    const token = await ctx.serviceAccountToken(audience);
    const command = new s.sts.AssumeRoleWithWebIdentityCommand({ RoleArn: spec.role, RoleSessionName: sessionName(ctx.namespace), WebIdentityToken: token });
    const out = await s.call<StsModule.AssumeRoleWithWebIdentityCommandOutput>(client, `sts:AssumeRoleWithWebIdentity of ${spec.role}`, command);
    return fromStsCredentials(out.Credentials);
  };
}

/** IRSA: the role EKS's webhook named in the controller's environment, with the token the
 *  kubelet keeps in the file (re-read at every refresh: it rotates). Neither comes from a store. */
function irsaCredentials(s: StsClients, ctx: ProviderContext, irsa: { role: string; tokenFile: string }): AwsCredentialIdentityProvider {
  const client = s.make(noCredentials);
  return async () => {
    let token: string;
    try {
      token = (await readFile(irsa.tokenFile, 'utf8')).trim();
    } catch (err) {
      throw new ProviderError('AuthFailed', ctx.storeId, `IRSA: the web identity token file ${irsa.tokenFile} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`, undefined, { cause: err });
    }
    const command = new s.sts.AssumeRoleWithWebIdentityCommand({ RoleArn: irsa.role, RoleSessionName: sessionName(ctx.namespace), WebIdentityToken: token });
    const out = await s.call<StsModule.AssumeRoleWithWebIdentityCommandOutput>(client, `sts:AssumeRoleWithWebIdentity of ${irsa.role} (IRSA)`, command);
    return fromStsCredentials(out.Credentials);
  };
}

/** EKS Pod Identity: the SDK's container credentials from the endpoint and token file the
 *  operator's environment names (never a store field: the SDK dials only loopback, the
 *  EKS agent's link-local address or HTTPS). A fresh provider per fetch: the SDK's one
 *  closes its connection handler after its first answer. */
async function podIdentityCredentials(ctx: ProviderContext, pi: { uri: string; tokenFile: string }): Promise<AwsCredentialIdentityProvider> {
  const { fromHttp } = await import('@aws-sdk/credential-provider-http');
  // The SDK waits `timeout` between its own retries too: none here, the callers retry
  // with backoff (as every SDK client of this provider, sdk.ts).
  const timeout = Math.min(ctx.timeoutMs, 5000);
  return async () => {
    try {
      return await fromHttp({ awsContainerCredentialsFullUri: pi.uri, awsContainerAuthorizationTokenFile: pi.tokenFile, timeout, maxRetries: 0 })();
    } catch (err) {
      // The SDK's message names the status or the token file, never a credential.
      throw new ProviderError('AuthFailed', ctx.storeId, `EKS Pod Identity (${pi.uri}): ${(err as Error).message.split('\n')[0]}`, undefined, { cause: err });
    }
  };
}

function assumeRole(store: { s: StsClients; ctx: ProviderContext; spec: AWSProvider }, step: Step, previous: AwsCredentialIdentityProvider): AwsCredentialIdentityProvider {
  const { s, ctx, spec } = store;
  const client = s.make(previous);
  const opts = step.withOptions;
  return async () => {
    const command = new s.sts.AssumeRoleCommand({
      RoleArn: step.role,
      RoleSessionName: sessionName(ctx.namespace),
      ...(opts && spec.externalID ? { ExternalId: spec.externalID } : {}),
      ...(opts && spec.sessionTags?.length ? { Tags: spec.sessionTags.map((t) => ({ Key: t.key, Value: t.value })) } : {}),
      ...(opts && spec.transitiveTagKeys?.length ? { TransitiveTagKeys: spec.transitiveTagKeys } : {}),
    });
    const out = await s.call<StsModule.AssumeRoleCommandOutput>(client, `sts:AssumeRole of ${step.role}`, command);
    return fromStsCredentials(out.Credentials);
  };
}

/** The controller's own AWS identity, for a store it lends it to that names no `auth`:
 *  EKS Pod Identity first, else IRSA (ESO's default chain, in the same order). */
function lentEnvironment(ctx: ProviderContext, spec: AWSProvider): { podIdentity?: { uri: string; tokenFile: string }; irsa?: { role: string; tokenFile: string } } {
  if (spec.auth || ctx.environmentIdentity !== true) return {};
  const podIdentity = podIdentityFromEnv();
  if (podIdentity) return { podIdentity };
  const irsa = irsaFromEnv();
  return irsa ? { irsa } : {};
}

/** The credentials every role step starts from: the lent environment's (Pod Identity, IRSA),
 *  the pod's web identity of `role`, or the store's static keys. */
async function firstCredentials(o: {
  ctx: ProviderContext; spec: AWSProvider; s: StsClients | undefined; webIdentity: boolean;
  podIdentity: { uri: string; tokenFile: string } | undefined; irsa: { role: string; tokenFile: string } | undefined;
}): Promise<AwsCredentialIdentityProvider> {
  if (o.podIdentity) return podIdentityCredentials(o.ctx, o.podIdentity);
  if (o.irsa) return irsaCredentials(o.s!, o.ctx, o.irsa);
  if (o.webIdentity) return webIdentityCredentials(o.s!, o.ctx, o.spec);
  const keys = staticKeys(o.ctx, o.spec);
  keys.catch(() => undefined);
  return () => keys;
}

export async function buildCredentials(ctx: ProviderContext, spec: AWSProvider): Promise<Credentials> {
  const { podIdentity, irsa } = lentEnvironment(ctx, spec);
  const webIdentity = usesWebIdentity(spec) && !podIdentity && !irsa;
  if (webIdentity && !spec.role) {
    const pi = ctx.environmentIdentity ? ' (or run the controller with EKS Pod Identity or IRSA, which need no role)' : '';
    throw new ProviderError('InvalidSpec', ctx.storeId, `${ROLE_REQUIRED}${pi}`);
  }
  if (webIdentity && (spec.externalID || spec.sessionTags?.length || spec.transitiveTagKeys?.length)) {
    ctx.logger.warn('aws.externalID, sessionTags and transitiveTagKeys apply to AssumeRole with static keys; ignored with web identity');
  }
  const steps = roleSteps(spec, webIdentity);
  const s = webIdentity || podIdentity || irsa || steps.length > 0 ? new StsClients(await import('@aws-sdk/client-sts'), ctx, spec) : undefined;

  let current = await firstCredentials({ ctx, spec, s, podIdentity, irsa, webIdentity });
  for (const step of steps) current = assumeRole({ s: s!, ctx, spec }, step, current);
  const provider = s ? cachedCredentials(current) : current;

  return {
    provider,
    async check() {
      const checker = new StsClients(s?.sts ?? (await import('@aws-sdk/client-sts')), ctx, spec);
      const client = checker.make(provider);
      try {
        await checker.call(client, 'sts:GetCallerIdentity', new checker.sts.GetCallerIdentityCommand({}));
      } finally {
        client.destroy();
      }
    },
    close() {
      for (const c of s?.all ?? []) c.destroy();
    },
  };
}

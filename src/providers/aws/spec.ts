// Static checks of `spec.provider.aws` (ESO v1 field names) and the operator-level
// settings read from the environment of the process that runs the provider (the agent
// container, the reconciler). Nothing here does I/O.
import type { AWSProvider } from '../../api/types.js';
import { fieldProblems, type FieldRule } from '../fields.js';
import { isObject } from '../../json-object.js';

export type AwsService = 'SecretsManager' | 'ParameterStore';
const SERVICES: readonly AwsService[] = ['SecretsManager', 'ParameterStore'];

/** Audience of the projected token for STS web identity when the store names none
 *  (the same default as `src/stores/access.ts`, so the mounted token matches). */
export const STS_AUDIENCE = 'sts.amazonaws.com';

/** Endpoint overrides, first match wins: ESO's variables (so an existing ESO deployment's
 *  settings carry over), then the AWS SDKs' standard service-specific variable, then the
 *  SDKs' global `AWS_ENDPOINT_URL`. None of them comes from a tenant's object. */
export const ENDPOINT_ENV: Readonly<Record<'secretsmanager' | 'ssm' | 'sts' | 'ecr' | 'ecrpublic' | 'sqs', readonly string[]>> = {
  secretsmanager: ['AWS_SECRETSMANAGER_ENDPOINT', 'AWS_ENDPOINT_URL_SECRETS_MANAGER', 'AWS_ENDPOINT_URL'],
  ssm: ['AWS_SSM_ENDPOINT', 'AWS_ENDPOINT_URL_SSM', 'AWS_ENDPOINT_URL'],
  sts: ['AWS_STS_ENDPOINT', 'AWS_ENDPOINT_URL_STS', 'AWS_ENDPOINT_URL'],
  /** The ECRAuthorizationToken generator (src/providers/aws/ecr.ts). */
  ecr: ['AWS_ECR_ENDPOINT', 'AWS_ENDPOINT_URL_ECR', 'AWS_ENDPOINT_URL'],
  /** Its `scope: public` (ECR Public's own API). */
  ecrpublic: ['AWS_ECR_PUBLIC_ENDPOINT', 'AWS_ENDPOINT_URL_ECR_PUBLIC', 'AWS_ENDPOINT_URL'],
  /** The controller's queue of change notifications (src/controller/fleet/aws-queue.ts). */
  sqs: ['AWS_SQS_ENDPOINT', 'AWS_ENDPOINT_URL_SQS', 'AWS_ENDPOINT_URL'],
};

/** The endpoint override for one service, or undefined for AWS's regional endpoint. */
export function endpointFromEnv(service: keyof typeof ENDPOINT_ENV, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const name of ENDPOINT_ENV[service]) {
    const v = env[name]?.trim();
    if (v) return v;
  }
  return undefined;
}

/** EKS Pod Identity, as the EKS Pod Identity webhook sets it in the containers of a pod
 *  whose ServiceAccount has an association: the node agent's credentials endpoint and the
 *  projected token it wants (the SDKs' container credentials). Both, or none. */
export const POD_IDENTITY_ENV = { uri: 'AWS_CONTAINER_CREDENTIALS_FULL_URI', tokenFile: 'AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE' } as const;

export function podIdentityFromEnv(env: NodeJS.ProcessEnv = process.env): { uri: string; tokenFile: string } | undefined {
  const uri = env[POD_IDENTITY_ENV.uri]?.trim();
  const tokenFile = env[POD_IDENTITY_ENV.tokenFile]?.trim();
  return uri && tokenFile ? { uri, tokenFile } : undefined;
}

/** IRSA: the variables EKS's pod identity webhook sets on a pod whose ServiceAccount has
 *  the `eks.amazonaws.com/role-arn` annotation (the role, and the projected token's file). */
export const IRSA_ENV = { role: 'AWS_ROLE_ARN', tokenFile: 'AWS_WEB_IDENTITY_TOKEN_FILE' } as const;

/** The controller's IRSA role and token file, when its environment has both. */
export function irsaFromEnv(env: NodeJS.ProcessEnv = process.env): { role: string; tokenFile: string } | undefined {
  const role = env[IRSA_ENV.role]?.trim();
  const tokenFile = env[IRSA_ENV.tokenFile]?.trim();
  return role && tokenFile ? { role, tokenFile } : undefined;
}

const ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/;
const REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;

/** Every field that references a Secret key or a ServiceAccount. */
export const FIELDS: readonly FieldRule[] = [
  { path: 'auth.secretRef.accessKeyIDSecretRef', kind: 'secretKey', required: 'withParent' },
  { path: 'auth.secretRef.secretAccessKeySecretRef', kind: 'secretKey', required: 'withParent' },
  { path: 'auth.secretRef.sessionTokenSecretRef', kind: 'secretKey' },
  { path: 'auth.jwt.serviceAccountRef', kind: 'serviceAccount' },
];

function roleProblem(v: unknown, path: string): string | undefined {
  if (typeof v !== 'string' || !ROLE_ARN.test(v)) return `${path} must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)`;
  return undefined;
}

function authProblems(auth: unknown): string[] {
  if (auth === undefined) return [];
  if (!isObject(auth)) return ['aws.auth must be an object'];
  const problems: string[] = [];
  if (auth.secretRef !== undefined && auth.jwt !== undefined) problems.push('aws.auth must set only one of secretRef and jwt');
  if (auth.secretRef !== undefined && !isObject(auth.secretRef)) problems.push('aws.auth.secretRef must be an object');
  if (auth.jwt !== undefined && !isObject(auth.jwt)) problems.push('aws.auth.jwt must be an object');
  const unknown = Object.keys(auth).filter((k) => k !== 'secretRef' && k !== 'jwt');
  if (unknown.length) problems.push(`aws.auth.${unknown[0]} is not supported by ESI (secretRef or jwt)`);
  return problems;
}

function secretsManagerProblems(sm: unknown): string[] {
  if (sm === undefined) return [];
  if (!isObject(sm)) return ['aws.secretsManager must be an object'];
  const problems: string[] = [];
  const force = sm.forceDeleteWithoutRecovery;
  const days = sm.recoveryWindowInDays;
  if (force !== undefined && typeof force !== 'boolean') problems.push('aws.secretsManager.forceDeleteWithoutRecovery must be a boolean');
  if (days !== undefined && days !== 0 && (typeof days !== 'number' || !Number.isInteger(days) || days < 7 || days > 30)) {
    problems.push('aws.secretsManager.recoveryWindowInDays must be an integer from 7 to 30');
  }
  if (force === true && typeof days === 'number' && days > 0) {
    problems.push('aws.secretsManager: forceDeleteWithoutRecovery and recoveryWindowInDays cannot both be set');
  }
  return problems;
}

function roleChainProblems(p: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (p.role !== undefined && p.role !== '') {
    const rp = roleProblem(p.role, 'aws.role');
    if (rp) problems.push(rp);
  }
  if (p.additionalRoles !== undefined) {
    if (!Array.isArray(p.additionalRoles)) problems.push('aws.additionalRoles must be a list of role ARNs');
    else p.additionalRoles.forEach((r, i) => {
      const rp = roleProblem(r, `aws.additionalRoles[${i}]`);
      if (rp) problems.push(rp);
    });
  }
  if (p.externalID !== undefined && typeof p.externalID !== 'string') problems.push('aws.externalID must be a string');
  if (p.sessionTags !== undefined) {
    if (!Array.isArray(p.sessionTags) || p.sessionTags.some((t) => !isObject(t) || typeof t.key !== 'string' || typeof t.value !== 'string')) {
      problems.push('aws.sessionTags must be a list of {key, value} strings');
    }
  }
  if (p.transitiveTagKeys !== undefined && (!Array.isArray(p.transitiveTagKeys) || p.transitiveTagKeys.some((k) => typeof k !== 'string'))) {
    problems.push('aws.transitiveTagKeys must be a list of strings');
  }
  return problems;
}

/** Why a web-identity store needs `role` (static check and client build). */
export const ROLE_REQUIRED =
  'aws.role is required for web identity (auth.jwt or no auth): ESI assumes that role with the pod\'s own ' +
  'service-account token and cannot read the ServiceAccount\'s eks.amazonaws.com/role-arn annotation';

/** Whether the store authenticates with the workload's token (STS web identity). */
export function usesWebIdentity(p: AWSProvider): boolean {
  return !p.auth || !p.auth.secretRef;
}

/** Checks `spec.provider.aws` without I/O; returns human-readable problems. */
export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['aws must be an object'];
  const problems: string[] = [];
  if (!SERVICES.includes(spec.service as AwsService)) problems.push(`aws.service must be one of ${SERVICES.join(', ')}`);
  if (typeof spec.region !== 'string' || spec.region === '') problems.push('aws.region is required');
  else if (!REGION.test(spec.region)) problems.push(`aws.region "${spec.region}" is not an AWS region name (e.g. eu-central-1)`);
  if (spec.prefix !== undefined && typeof spec.prefix !== 'string') problems.push('aws.prefix must be a string');
  problems.push(...authProblems(spec.auth), ...fieldProblems('aws', FIELDS, spec), ...roleChainProblems(spec), ...secretsManagerProblems(spec.secretsManager));
  if (spec.secretsManager !== undefined && spec.service === 'ParameterStore') {
    problems.push('aws.secretsManager applies to service SecretsManager only');
  }
  // Without any `auth`, the controller may use its EKS Pod Identity, where no role is
  // needed (auth.ts): then `role` is checked when the client is built.
  if (problems.length === 0 && spec.auth !== undefined && usesWebIdentity(spec as unknown as AWSProvider) && !spec.role) {
    problems.push(ROLE_REQUIRED);
  }
  return problems;
}

// ESO's generators (generators.external-secrets.io) as functions from a spec to a key →
// bytes map: Password, UUID and Fake here, ECRAuthorizationToken and VaultDynamicSecret
// through the calls the consumer passes in (it decides whose credentials they use:
// src/controller/generatorstate/generators.ts). Every call produces new values; nothing is kept
// (ESO's semantics: docs/generators.md). Errors never hold a value.
import { randomUUID } from 'node:crypto';
import type { ECRAuthorizationTokenSpec, FakeSpec, GeneratorKind, PasswordSpec, VaultDynamicSecretSpec } from '../api/generators.js';
import { CLUSTER_GENERATOR_FIELDS, GENERATOR_RESOURCES, GENERATORS_API_VERSION } from '../api/generators.js';
import type { GeneratorRef } from '../api/types.js';
import { nameProblem } from '../kube/names.js';
import { emptySecretMap, type SecretMap } from '../providers/types.js';
import { GeneratorError } from './errors.js';
import { passwords } from './password.js';

export { GeneratorError } from './errors.js';

/** Bounds of a Fake generator's data: 256 keys, 1 MiB in all (a Secret's limit). */
const MAX_FAKE_KEYS = 256;
const MAX_FAKE_BYTES = 1024 * 1024;

/** What an ECR GetAuthorizationToken returned, as ESO's generator outputs it. */
export interface EcrToken {
  username: string;
  password: string;
  /** Absent for ECR Public (ESO then writes no `proxy_endpoint`). */
  proxyEndpoint?: string;
  expiresAt: Date;
}

/** The calls that need a remote service, with the consumer's credential rules. */
export interface GeneratorCalls {
  ecr(spec: ECRAuthorizationTokenSpec): Promise<EcrToken>;
  vault(spec: VaultDynamicSecretSpec): Promise<SecretMap>;
}

function isServedKind(kind: string): kind is GeneratorKind {
  return kind !== 'ClusterGenerator' && Object.hasOwn(GENERATOR_RESOURCES, kind);
}

/** Why `ref` cannot name a generator ESI runs, or undefined (no I/O). */
export function generatorRefProblem(ref: GeneratorRef | undefined): string | undefined {
  if (!ref || typeof ref !== 'object') return 'generatorRef must name a generator (apiVersion, kind, name)';
  if (ref.apiVersion !== undefined && ref.apiVersion !== GENERATORS_API_VERSION) return `generatorRef.apiVersion must be ${GENERATORS_API_VERSION}, got ${JSON.stringify(ref.apiVersion)}`;
  if (typeof ref.kind !== 'string' || !Object.hasOwn(GENERATOR_RESOURCES, ref.kind)) {
    return `generatorRef.kind ${JSON.stringify(ref.kind)} is not a generator ESI runs (${Object.keys(GENERATOR_RESOURCES).join(', ')})`;
  }
  const bad = nameProblem(ref.name, 'subdomain');
  return bad ? `generatorRef.name ${bad}` : undefined;
}

const text = (values: Record<string, string>): SecretMap => {
  const out = emptySecretMap();
  for (const [k, v] of Object.entries(values)) out[k] = new TextEncoder().encode(v);
  return out;
};

function fake(spec: FakeSpec = {}): SecretMap {
  const data = spec.data ?? {};
  const entries = Object.entries(data);
  if (entries.length > MAX_FAKE_KEYS) throw new GeneratorError(`spec.data has ${entries.length} keys (at most ${MAX_FAKE_KEYS})`);
  const bytes = entries.reduce((n, [k, v]) => n + k.length + (typeof v === 'string' ? Buffer.byteLength(v) : 0), 0);
  if (bytes > MAX_FAKE_BYTES) throw new GeneratorError(`spec.data holds more than ${MAX_FAKE_BYTES} bytes`);
  for (const [k, v] of entries) if (typeof v !== 'string') throw new GeneratorError(`spec.data.${k} must be a string`);
  return text(data);
}

/** ESO's ECRAuthorizationToken output keys (no `proxy_endpoint` for a public registry). */
function ecrValues(t: EcrToken): SecretMap {
  const expires = String(Math.floor(t.expiresAt.getTime() / 1000));
  return text(t.proxyEndpoint === undefined ? { username: t.username, password: t.password, expires_at: expires } : { username: t.username, password: t.password, proxy_endpoint: t.proxyEndpoint, expires_at: expires });
}

/** New values of a generator of `kind` with `spec`. Throws GeneratorError (or the calls'). */
export async function runGenerator(kind: GeneratorKind, spec: unknown, calls: GeneratorCalls): Promise<SecretMap> {
  switch (kind) {
    case 'Password':
      return text(passwords((spec ?? {}) as PasswordSpec));
    case 'UUID':
      return text({ uuid: randomUUID() });
    case 'Fake':
      return fake(spec as FakeSpec | undefined);
    case 'ECRAuthorizationToken':
      return ecrValues(await calls.ecr(spec as ECRAuthorizationTokenSpec));
    case 'VaultDynamicSecret':
      return calls.vault(spec as VaultDynamicSecretSpec);
  }
}

/** A ClusterGenerator's kind and spec; throws GeneratorError when they do not match. */
export function clusterGeneratorSpec(spec: { kind?: unknown; generator?: Record<string, unknown> } | undefined): { kind: GeneratorKind; spec: unknown } {
  const kind = spec?.kind;
  if (typeof kind !== 'string' || !isServedKind(kind)) {
    throw new GeneratorError(`spec.kind ${JSON.stringify(kind)} is not a generator ESI runs (${Object.keys(CLUSTER_GENERATOR_FIELDS).join(', ')})`);
  }
  const field = CLUSTER_GENERATOR_FIELDS[kind];
  const set = Object.keys(spec?.generator ?? {});
  if (set.length !== 1 || set[0] !== field) throw new GeneratorError(`spec.generator must hold exactly ${field} for kind ${kind}`);
  return { kind, spec: spec!.generator![field] };
}

// TypeScript shapes of the generators.external-secrets.io kinds ESI serves (v1alpha1), with
// ESO's field names (docs/generators.md). A generator
// produces values for `dataFrom[].sourceRef.generatorRef` and PushSecret
// `selector.generatorRef`. Optional fields stay optional: the CRDs set no defaults, the
// code applies ESO's (src/generators/). Re-exported by types.ts.
import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { Condition } from './condition.js';
import type { AWSAuth, VaultProvider } from './providers.js';

export const GENERATORS_GROUP = 'generators.external-secrets.io';
export const GENERATORS_VERSION = 'v1alpha1';
export const GENERATORS_API_VERSION = `${GENERATORS_GROUP}/${GENERATORS_VERSION}`;

/** Plural resource names of the generator kinds ESI serves, by kind. */
export const GENERATOR_RESOURCES = {
  Password: 'passwords',
  UUID: 'uuids',
  Fake: 'fakes',
  ECRAuthorizationToken: 'ecrauthorizationtokens',
  VaultDynamicSecret: 'vaultdynamicsecrets',
  ClusterGenerator: 'clustergenerators',
} as const;

export type GeneratorKind = Exclude<keyof typeof GENERATOR_RESOURCES, 'ClusterGenerator'>;

export const PASSWORD_ENCODINGS = ['raw', 'base64', 'base64url', 'base32', 'hex'] as const;
export type PasswordEncoding = (typeof PASSWORD_ENCODINGS)[number];

export interface PasswordSpec {
  /** 24 when omitted. */
  length?: number;
  /** Digits in the password; 25% of the length when omitted. */
  digits?: number;
  /** Symbols in the password; 25% of the length when omitted. */
  symbols?: number;
  /** The symbols to draw from; ESO's set (`~!@#$%^&*()_+`-={}|[]\:"<>?,./`) when omitted. */
  symbolCharacters?: string;
  /** No uppercase letters (false when omitted). */
  noUpper?: boolean;
  /** A character may appear more than once (false when omitted). */
  allowRepeat?: boolean;
  /** `raw` when omitted. */
  encoding?: PasswordEncoding;
  /** The keys filled with (distinct) passwords; `password` when omitted. */
  secretKeys?: string[];
}

/** UUID has no settings. */
export type UUIDSpec = Record<string, never>;

export interface FakeSpec {
  /** Which controller class serves it (as a store's spec.controller). */
  controller?: string;
  /** The static data returned. */
  data?: Record<string, string>;
}

export interface ECRAuthorizationTokenSpec {
  region: string;
  /** A role to assume before the call. */
  role?: string;
  /** `private` (default) or `public`. */
  scope?: string;
  auth?: AWSAuth;
}

export interface VaultDynamicSecretSpec {
  controller?: string;
  /** Vault path to read or write, e.g. `database/creds/app`. */
  path: string;
  /** HTTP method: GET (default) or POST/PUT with `parameters`. */
  method?: string;
  parameters?: unknown;
  getParameters?: Record<string, string[]>;
  /** `Data` (default), `Raw` or `Auth`. */
  resultType?: string;
  retrySettings?: { maxRetries?: number; retryInterval?: string };
  allowEmptyResponse?: boolean;
  provider: VaultProvider;
}

interface GeneratorObject<K extends string, S> {
  apiVersion: typeof GENERATORS_API_VERSION;
  kind: K;
  metadata: V1ObjectMeta;
  spec?: S;
  status?: { conditions?: Condition[] };
}

export type Password = GeneratorObject<'Password', PasswordSpec>;
export type UUID = GeneratorObject<'UUID', UUIDSpec>;
export type Fake = GeneratorObject<'Fake', FakeSpec>;
export type ECRAuthorizationToken = GeneratorObject<'ECRAuthorizationToken', ECRAuthorizationTokenSpec>;
export type VaultDynamicSecret = GeneratorObject<'VaultDynamicSecret', VaultDynamicSecretSpec>;

/** The spec of each kind inside a ClusterGenerator (exactly one is set, matching `kind`). */
export interface ClusterGeneratorSpecs {
  passwordSpec?: PasswordSpec;
  uuidSpec?: UUIDSpec;
  fakeSpec?: FakeSpec;
  ecrAuthorizationTokenSpec?: ECRAuthorizationTokenSpec;
  vaultDynamicSecretSpec?: VaultDynamicSecretSpec;
  /** ESO's other generator kinds: accepted, not served. */
  [other: string]: unknown;
}

export interface ClusterGenerator {
  apiVersion: typeof GENERATORS_API_VERSION;
  kind: 'ClusterGenerator';
  metadata: V1ObjectMeta;
  spec: { kind: string; generator: ClusterGeneratorSpecs };
}

/** The ClusterGenerator field holding each served kind's spec. */
export const CLUSTER_GENERATOR_FIELDS: Record<GeneratorKind, keyof ClusterGeneratorSpecs> = {
  Password: 'passwordSpec',
  UUID: 'uuidSpec',
  Fake: 'fakeSpec',
  ECRAuthorizationToken: 'ecrAuthorizationTokenSpec',
  VaultDynamicSecret: 'vaultDynamicSecretSpec',
};

/** ESO keeps here what a stateful generator produced, for later clean-up. ESI's reconciler
 *  keeps the leases VaultDynamicSecret mints here (src/controller/generatorstate/state.ts). */
export interface GeneratorState {
  apiVersion: typeof GENERATORS_API_VERSION;
  kind: 'GeneratorState';
  metadata: V1ObjectMeta;
  spec: { garbageCollectionDeadline?: string; resource: unknown; state: unknown };
  status?: { conditions?: Condition[] };
}

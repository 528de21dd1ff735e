// What an injected pod reads, from the ExternalSecrets it mounts: remote reads per store and
// refresh (the agent coalesces identical reads within a cycle, injector/fetch.ts), and, for
// stores whose changes the controller is told of, the sources: the Kubernetes provider's
// Secrets, AWS secrets and parameters, GCP Secret Manager secrets (docs/fleet.md).
import type { AnySecretStore, AWSProvider, ExternalSecret, SecretStoreRef } from '../../api/types.js';
import type { GCPSMProvider } from '../../api/types.js';
import { storeIdOf } from '../../stores/id.js';
import { awsNames } from './aws-events.js';
import { gcpKey } from './gcp-events.js';

/** Reads per second (or minute, hour) the fleet may make of a store: `600/m`. */
export const READ_BUDGET_ANNOTATION = 'esi.dev/read-budget';
/** `"true"` on a store: the controller tells its pods of changes it learns with its own
 *  identity (a Kubernetes-provider store's Secrets, as --change-notifications allows; an AWS
 *  store's secrets or parameters, from the operator's queue, --aws-change-queue-url; a
 *  gcpsm store's secrets, from the operator's subscription, --gcp-change-subscription). */
export const CHANGE_NOTIFICATIONS_ANNOTATION = 'esi.dev/change-notifications';

type StoreLookup = (kind: 'SecretStore' | 'ClusterSecretStore', ns: string, name: string) => AnySecretStore | undefined;

export interface Source {
  kind: 'kubernetes' | 'aws' | 'gcp';
  /** kubernetes: the namespace; aws: `<service>/<region>` (awsScope); gcp: `gcp/<location>`
   *  (gcpScope). */
  scope: string;
  /** A Secret name, an AWS entry's canonical name (awsNames), a GCP secret id; `*` for every
   *  entry of the scope (dataFrom.find). */
  name: string;
}

/** The scope of an AWS store's sources: what one event must match besides the name. */
export const awsScope = (service: string, region: string): string => `${service}/${region}`;
/** The scope of GCP sources: one per location (`global` or a region). */
export const gcpScope = (location: string): string => `gcp/${location}`;

function resolve(ns: string, ref: SecretStoreRef | undefined, lookup: StoreLookup): { id: string; store: AnySecretStore } | undefined {
  if (!ref?.name) return undefined;
  const kind = ref.kind === 'ClusterSecretStore' ? 'ClusterSecretStore' : 'SecretStore';
  const store = lookup(kind, ns, ref.name);
  return store ? { id: storeIdOf(kind, ref.name, kind === 'SecretStore' ? ns : undefined), store } : undefined;
}

/** Every remote read of the ExternalSecrets, by the store it goes to, with its reads key. */
function eachRead(ns: string, list: readonly ExternalSecret[], lookup: StoreLookup, fn: (id: string, store: AnySecretStore, read: string, key: string | undefined) => void): void {
  for (const es of list) {
    const main = es.spec.secretStoreRef;
    for (const d of es.spec.data ?? []) {
      if (d.sourceRef?.generatorRef) continue;
      const s = resolve(ns, d.sourceRef?.storeRef ?? main, lookup);
      if (s) fn(s.id, s.store, `get ${d.remoteRef.key} ${d.remoteRef.property ?? ''} ${d.remoteRef.version ?? ''}`, d.remoteRef.key);
    }
    for (const [i, d] of (es.spec.dataFrom ?? []).entries()) {
      const s = d.sourceRef?.generatorRef ? undefined : resolve(ns, d.sourceRef?.storeRef ?? main, lookup);
      if (!s) continue;
      if (d.extract) fn(s.id, s.store, `map ${d.extract.key}`, d.extract.key);
      else fn(s.id, s.store, `find ${es.metadata.name} ${i}`, d.find ? '*' : undefined);
    }
  }
}

/** Store id → the store and the distinct remote reads one refresh of the pod makes of it. */
export function storeReads(ns: string, list: readonly ExternalSecret[], lookup: StoreLookup): Map<string, { store: AnySecretStore; reads: number }> {
  const seen = new Map<string, { store: AnySecretStore; keys: Set<string> }>();
  eachRead(ns, list, lookup, (id, store, read) => {
    let e = seen.get(id);
    if (!e) seen.set(id, (e = { store, keys: new Set() }));
    e.keys.add(read);
  });
  return new Map([...seen].map(([id, e]) => [id, { store: e.store, reads: e.keys.size }]));
}

/** The namespace a Kubernetes-provider store reads, when the controller may watch it: a
 *  SecretStore only its own namespace (a tenant learns nothing of another's Secrets, not even
 *  when they change), a ClusterSecretStore (the operator's) any. */
function watchedNamespace(store: AnySecretStore, ns: string): string | undefined {
  if (store.metadata.annotations?.[CHANGE_NOTIFICATIONS_ANNOTATION] !== 'true') return undefined;
  const spec = (store.spec.provider as { kubernetes?: { remoteNamespace?: string } }).kubernetes;
  if (!spec) return undefined;
  const remote = spec.remoteNamespace ?? (store.kind === 'SecretStore' ? store.metadata.namespace! : ns);
  if (store.kind === 'SecretStore' && remote !== store.metadata.namespace) return undefined;
  return remote;
}

/** An opted-in AWS store's service and region (Secrets Manager, Parameter Store). */
function awsOf(store: AnySecretStore): AWSProvider | undefined {
  if (store.metadata.annotations?.[CHANGE_NOTIFICATIONS_ANNOTATION] !== 'true') return undefined;
  const aws = (store.spec.provider as { aws?: AWSProvider }).aws;
  return aws && (aws.service === 'SecretsManager' || aws.service === 'ParameterStore') && typeof aws.region === 'string' ? aws : undefined;
}

/** An opted-in gcpsm store. */
function gcpOf(store: AnySecretStore): GCPSMProvider | undefined {
  if (store.metadata.annotations?.[CHANGE_NOTIFICATIONS_ANNOTATION] !== 'true') return undefined;
  return (store.spec.provider as { gcpsm?: GCPSMProvider }).gcpsm;
}

/** The sources of the pod's stores whose changes the controller is told of. */
export function podSources(ns: string, list: readonly ExternalSecret[], lookup: StoreLookup): Source[] {
  const out = new Map<string, Source>();
  const add = (s: Source) => out.set(`${s.kind}:${s.scope}/${s.name}`, s);
  eachRead(ns, list, lookup, (_id, store, _read, key) => {
    if (!key) return;
    const namespace = watchedNamespace(store, ns);
    if (namespace) return add({ kind: 'kubernetes', scope: namespace, name: key });
    const gcp = gcpOf(store);
    if (gcp) {
      const location = typeof gcp.location === 'string' && gcp.location ? gcp.location : 'global';
      if (key === '*') return add({ kind: 'gcp', scope: gcpScope(location), name: '*' });
      const k = gcpKey(location, key);
      if (k) add({ kind: 'gcp', scope: gcpScope(k.location), name: k.secret });
      return;
    }
    const aws = awsOf(store);
    if (!aws) return;
    const scope = awsScope(aws.service, aws.region);
    // The remote name is the store's prefix + the key (providers/aws/base.ts); a find may
    // match any entry of the scope.
    if (key === '*') return add({ kind: 'aws', scope, name: '*' });
    for (const name of awsNames(aws.service as 'SecretsManager' | 'ParameterStore', (aws.prefix ?? '') + key)) add({ kind: 'aws', scope, name });
  });
  return [...out.values()];
}

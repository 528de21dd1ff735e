// What one ExternalSecret names, checked before anything is fetched. Its stores —
// `spec.secretStoreRef` and each entry's own `sourceRef.storeRef` (ESO's several stores in one
// ExternalSecret) — are looked up in the controller's caches, and every store gets
// the same rules, from the same place as a single store always had (src/stores/use.ts): a
// SecretStore is looked up in the ExternalSecret's own namespace only (a reference carries no
// namespace), a ClusterSecretStore must admit that namespace (spec.conditions) and must not
// reference credentials elsewhere, no store may lend the controller's own identity
// (src/controller/runtime/clients.ts), and each must be Ready. Then the checks that need no
// I/O: the spec checks the webhook applies too (one validator, src/externalsecret/checks.ts),
// the template engine and sources, ConfigMap targets and the refresh settings, all gathered
// into one InvalidSpec Failure, so a user sees every field to fix at once.
import type { AnySecretStore, ExternalSecret } from '../../api/types.js';
import { externalSecretSpecProblems } from '../../externalsecret/checks.js';
import type { UsedStoreRef } from '../../externalsecret/store-refs.js';
import { TemplateSourceError } from '../../externalsecret/template-sources.js';
import { nameProblem } from '../../kube/names.js';
import type { KubeRest } from '../../kube/rest.js';
import { storeIdOf } from '../../stores/id.js';
import { crossNamespaceRefs, describeStore, lookupStore, namespaceRefusal, storeNotFound } from '../../stores/use.js';
import { selectTemplateEngine } from '../../templating/index.js';
import type { ClientCache } from '../runtime/clients.js';
import type { Informers } from '../runtime/informers.js';
import { storePath, type StoreReconciler } from '../secretstore/reconcile.js';
import { Failure, IdentityRefusal } from './fetch.js';
import { refreshSpec, type RefreshSpec } from './refresh.js';
import { templateSpecProblems } from './template-from.js';

export interface StoreLookupDeps {
  informers: Informers;
  rest: KubeRest;
  stores: StoreReconciler;
}

/** The stores `refs` name for `es`, or why the reconcile waits: `StoreNotCached` (the API has
 *  a store the cache does not show yet) or `OtherClass` (a store belongs to another
 *  controller: as ESO, the whole ExternalSecret is then left to it). Throws Failure. */
export async function lookupStores(es: ExternalSecret, refs: readonly UsedStoreRef[], d: StoreLookupDeps): Promise<{ stores: AnySecretStore[] } | { skip: 'StoreNotCached' | 'OtherClass' }> {
  const ns = es.metadata.namespace!;
  for (const ref of refs) {
    const bad = nameProblem(ref.name, 'subdomain');
    if (bad) throw new Failure('InvalidSpec', `ExternalSecret "${es.metadata.name}": ${ref.field}.name ${bad}`, false);
  }
  const stores: AnySecretStore[] = [];
  for (const ref of refs) {
    const obj = lookupStore(d.informers, ref, ns);
    if (obj) {
      stores.push(obj);
      continue;
    }
    // A cache miss is not proof: the store's add event can arrive after the
    // ExternalSecret's. A store that exists may be another controller's class, and a
    // StoreNotFound written from this lagging cache would overwrite the status its own
    // controller wrote (nothing would ever rewrite it). So only a store the API confirms
    // missing is reported; otherwise wait for the cache (the store's add event, or the retry).
    if (await d.rest.exists(storePath(ref.kind, ns, ref.name))) return { skip: 'StoreNotCached' };
    throw new Failure('StoreNotFound', storeNotFound(ref, ns, ref.field), true); // retried with backoff
  }
  if (!stores.every((s) => d.stores.served(s))) return { skip: 'OtherClass' };
  return { stores };
}

/** The access rules, for each store the ExternalSecret uses; throws Failure (AccessDenied). */
function checkStoreAccess(es: ExternalSecret, stores: readonly AnySecretStore[], d: { informers: Informers; clients: ClientCache }): void {
  const ns = es.metadata.namespace!;
  for (const store of stores) {
    const notAdmitted = namespaceRefusal(store, d.informers, ns);
    if (notAdmitted) throw new Failure('AccessDenied', notAdmitted, false);
    if (store.kind === 'ClusterSecretStore') {
      const cross = crossNamespaceRefs(store.spec.provider, ns);
      if (cross.length) throw new Failure('AccessDenied', `${describeStore(store)}: ${cross.join('; ')}`, false);
    }
    const refused = d.clients.identityProblem(store);
    if (refused) throw new IdentityRefusal(`${describeStore(store)}: ${refused}`);
  }
}

/** Each store's readiness (validated once per generation); throws Failure (StoreNotReady). */
export async function ensureStoresReady(stores: readonly AnySecretStore[], d: { stores: StoreReconciler }): Promise<void> {
  for (const store of stores) {
    const st = await d.stores.ensure(store);
    if (!st.ready) throw new Failure('StoreNotReady', `${describeStore(store)} is not ready: ${st.message}`, false);
  }
}

/** The ids of the stores `refs` name for an ExternalSecret in `ns` (the dependents index). */
export function storeIdsOf(refs: readonly UsedStoreRef[], ns: string): string[] {
  return refs.map((r) => storeIdOf(r.kind, r.name, ns));
}

export interface SpecCheckDeps {
  informers: Informers;
  clients: ClientCache;
  allowConfigMapTargets?: boolean;
}

/** Access rules and spec checks that need no I/O; throws Failure. */
export function checkSpec(es: ExternalSecret, stores: readonly AnySecretStore[], d: SpecCheckDeps): RefreshSpec {
  checkStoreAccess(es, stores, d);
  // The webhook refuses the same features when a pod mounts the ExternalSecret.
  const problems = externalSecretSpecProblems(es.spec, 'reconciler').map((p) => p.message);
  try {
    selectTemplateEngine(es.metadata.name!, es.metadata.annotations, es.spec.target?.template);
  } catch (err) {
    problems.push((err as Error).message.replace(/^ExternalSecret "[^"]*": /, ''));
  }
  problems.push(...templateProblems(es));
  const manifest = es.spec.target?.manifest;
  if (manifest?.kind === 'ConfigMap' && manifest.apiVersion === 'v1' && !d.allowConfigMapTargets) {
    problems.push('spec.target.manifest (ConfigMap) is not enabled in this controller: its operator starts it with --allow-configmap-targets (chart: controller.configMapTargets), off by default because values in a ConfigMap are not encrypted at rest and are readable by whoever may read ConfigMaps; remove it to get a Secret');
  }
  let refresh: RefreshSpec | undefined;
  try {
    refresh = refreshSpec(es);
  } catch (err) {
    problems.push((err as Error).message);
  }
  if (problems.length || !refresh) throw new Failure('InvalidSpec', `ExternalSecret "${es.metadata.name}": ${problems.join('; ')}`, false);
  return refresh;
}

/** The template sources' problems; a source in another namespace is an access refusal. */
function templateProblems(es: ExternalSecret): string[] {
  try {
    return templateSpecProblems(es);
  } catch (err) {
    if (err instanceof TemplateSourceError) throw new Failure('AccessDenied', `ExternalSecret "${es.metadata.name}": ${err.message}`, false);
    throw err;
  }
}

// Writing one ExternalSecret's target: the Secret by the plan ./secret.ts decides (applyPlan
// performs it), or the ConfigMap of spec.target.manifest (./manifest-target.ts); the live
// Secret is read when the cache cannot answer (../runtime/cached-secret.ts: it trusts only
// Secrets as ESI wrote them, and keeps the data of Merge targets only); an Owner Secret whose
// remote data is gone is deleted. A refusal or an API error becomes a Failure naming the
// object, never a value.
import type { V1Secret } from '@kubernetes/client-node';
import type { AnySecretStore, ExternalSecret } from '../../api/types.js';
import { resourcePath, SECRETS } from '../../kube/paths.js';
import { isKubeStatus, UNREAD, type KubeRest } from '../../kube/rest.js';
import type { RenderedTemplate } from '../../templating/index.js';
import type { EventRecorder } from '../runtime/events.js';
import type { Informers } from '../runtime/informers.js';
import { sourceOf } from '../generatorstate/generators.js';
import { Failure, regarding } from './fetch.js';
import { isManifestTarget, targetName, writeConfigMap } from './manifest-target.js';
import { desiredSecret, planSecret, type Desired, type Plan } from './secret.js';
import { dataChanged } from '../restart/match.js';
import { dataElided } from '../runtime/cached-secret.js';

/** Performs `plan` on Secret `ns/name`; true when the Secret was written. */
async function applyPlan(rest: KubeRest, plan: Plan, ns: string, name: string): Promise<boolean> {
  const path = resourcePath(SECRETS, { namespace: ns });
  const named = resourcePath(SECRETS, { namespace: ns, name });
  switch (plan.action) {
    case 'none':
    case 'refuse':
      return false;
    case 'create':
      await rest.create(path, plan.body, UNREAD);
      return true;
    case 'replace':
      await rest.replace(named, plan.body, UNREAD);
      return true;
    case 'recreate':
      await rest.delete(named).catch((err: unknown) => {
        if (!isKubeStatus(err, 404)) throw err;
      });
      await rest.create(path, plan.body, UNREAD);
      return true;
  }
}


export interface WriteDeps {
  rest: KubeRest;
  events: EventRecorder;
  informers: Informers;
}

/** What a write did. `missing`: creationPolicy Merge found no Secret to merge into, which is
 *  not a failure (ESO); `changed`: an existing Secret's data changed (restart on change). */
export interface Written {
  wrote: boolean;
  action: Plan['action'];
  missing?: string;
  changed?: boolean;
}

export class TargetWriter {
  constructor(private readonly d: WriteDeps) {}

  /** Writes the target Secret when it differs; throws Failure when refused. */
  async write(es: ExternalSecret, stores: readonly AnySecretStore[], rendered: RenderedTemplate, cached: V1Secret | undefined): Promise<Written> {
    const ns = es.metadata.namespace!;
    const target = targetName(es);
    const desired = desiredSecret(es, sourceOf(es, stores), rendered);
    if (isManifestTarget(es)) return this.writeConfigMap(es, desired);
    // A Merge writes the Secret's other keys back: it needs them (the cache may hold none).
    let cur = (!cached || dataElided(cached)) && desired.policy === 'Merge' ? await this.read(ns, target) : cached;
    const exists = (n: string) => !!this.d.informers.externalSecret(ns, n);
    let plan = planSecret(desired, es, cur, exists);
    const wrote = await applyPlan(this.d.rest, plan, ns, target).catch(async (err: unknown) => {
      if (!isKubeStatus(err, 409) || plan.action !== 'create') throw err;
      // Exists but not in the managed cache (not ours, or created a moment ago): look.
      plan = planSecret(desired, es, (cur = await this.read(ns, target)), exists);
      return applyPlan(this.d.rest, plan, ns, target);
    }).catch((err: unknown) => {
      if (err instanceof Failure) throw err;
      throw new Failure('SecretWriteError', `cannot write Secret "${ns}/${target}": ${(err as Error).message}`, true);
    });
    if ((plan.action === 'replace' || plan.action === 'recreate') && plan.adopted) {
      this.d.events.emit(regarding(es), 'Normal', 'Adopted', `Took over Secret "${target}": ${plan.adopted}`);
    }
    if (plan.action === 'refuse' && plan.reason === 'SecretMissing') return { wrote, action: plan.action, missing: plan.message };
    if (plan.action === 'refuse') throw new Failure(plan.reason, plan.message, false);
    return { wrote, action: plan.action, changed: wrote && dataChanged(cur, plan) };
  }

  /** spec.target.manifest: the ConfigMap, by the Secret's rules (./manifest-target.ts). */
  private async writeConfigMap(es: ExternalSecret, desired: Desired): Promise<Written> {
    const exists = (n: string) => !!this.d.informers.externalSecret(es.metadata.namespace!, n);
    const { wrote, plan } = await writeConfigMap(this.d.rest, desired, es, exists).catch((err: unknown) => {
      throw new Failure('SecretWriteError', `cannot write ConfigMap "${desired.namespace}/${desired.name}": ${(err as Error).message}`, true);
    });
    if (plan.action === 'replace' && plan.adopted) this.d.events.emit(regarding(es), 'Normal', 'Adopted', `Took over ConfigMap "${desired.name}": ${plan.adopted}`);
    if (plan.action === 'refuse') throw new Failure(plan.reason, plan.message, false);
    return { wrote, action: plan.action };
  }

  /** deletionPolicy Delete with no remote data left: deletes the target Secret when it is
   *  ours; true when it was. */
  async deleteIfOwned(es: ExternalSecret, cur: V1Secret | undefined): Promise<boolean> {
    const ns = es.metadata.namespace!;
    const target = targetName(es);
    // The cache holds only Secrets as ESI wrote them (../runtime/informers.ts): read any other one. Ours =
    // its controller ownerReference is this ExternalSecret (what creationPolicy Owner writes).
    const live = cur ?? (await this.read(ns, target));
    const mine = !!live?.metadata?.ownerReferences?.some((o) => o.controller && o.uid === es.metadata.uid);
    if (!mine) return false;
    await this.d.rest.delete(resourcePath(SECRETS, { namespace: ns, name: target })).catch((err: unknown) => {
      if (!isKubeStatus(err, 404)) throw new Failure('SecretWriteError', `cannot delete Secret "${ns}/${target}": ${(err as Error).message}`, true);
    });
    this.d.events.emit(regarding(es), 'Normal', 'Deleted', `Deleted Secret "${target}": no remote data is left (deletionPolicy Delete)`);
    return true;
  }

  private read(ns: string, name: string): Promise<V1Secret | undefined> {
    return this.d.rest.find<V1Secret>(resourcePath(SECRETS, { namespace: ns, name })).catch((err: unknown) => {
      throw new Failure('SecretReadError', `cannot read Secret "${ns}/${name}": ${(err as Error).message}`, true);
    });
  }
}

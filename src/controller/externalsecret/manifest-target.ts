// `spec.target.manifest` (ESO's generic targets), served for one kind only: a v1 ConfigMap
// in the ExternalSecret's own namespace, behind --allow-configmap-targets (docs/controller.md, "ConfigMap targets": a
// ConfigMap's values are not encrypted at rest, and other kinds have semantics ESI cannot
// check). The
// ConfigMap is the Secret the reconciler would write, in another shape: the same desired
// content and metadata (src/controller/externalsecret/secret.ts desiredSecret) and the same ownership rules
// (planSecret: never another ExternalSecret's, never one ESI does not manage unless its
// writer allows it), so one rule decides both. Values valid as UTF-8 go to `data`,
// others to `binaryData` (base64), as kubectl create configmap --from-file does.
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { ExternalSecret } from '../../api/types.js';
import { CONFIG_MAPS, resourcePath } from '../../kube/paths.js';
import type { KubeRest } from '../../kube/rest.js';
import { planSecret, type Desired, type Plan } from './secret.js';

export function isManifestTarget(es: ExternalSecret): boolean {
  return !!es.spec.target?.manifest;
}

/** The name of the object the ExternalSecret writes. */
export function targetName(es: ExternalSecret): string {
  return es.spec.target?.name ?? es.metadata.name!;
}

/** The kind of object the ExternalSecret writes: a Secret, or its manifest's ConfigMap. */
export function targetKind(es: ExternalSecret): 'Secret' | 'ConfigMap' {
  return isManifestTarget(es) ? 'ConfigMap' : 'Secret';
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A ConfigMap as the Secret planSecret reasons about: every value base64, type Opaque. */
function asSecret(cm: V1ConfigMap): V1Secret {
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(cm.data ?? {})) data[k] = Buffer.from(v, 'utf8').toString('base64');
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) data[k] = v;
  return { apiVersion: 'v1', kind: 'Secret', metadata: cm.metadata, type: 'Opaque', data };
}

/** The Secret body planSecret wrote, as the ConfigMap to send. */
function asConfigMap(s: V1Secret): V1ConfigMap {
  const data: Record<string, string> = {};
  const binaryData: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.data ?? {})) {
    const bytes = Buffer.from(v, 'base64');
    try {
      data[k] = utf8.decode(bytes);
    } catch {
      binaryData[k] = v;
    }
  }
  return {
    apiVersion: 'v1', kind: 'ConfigMap', metadata: s.metadata,
    ...(Object.keys(data).length ? { data } : {}), ...(Object.keys(binaryData).length ? { binaryData } : {}),
  };
}

/** What to do about the target ConfigMap (`cur`: the live one, if any). */
function planConfigMap(d: Desired, es: ExternalSecret, cur: V1ConfigMap | undefined, esExists: (name: string) => boolean): Plan {
  return planSecret({ ...d, kind: 'ConfigMap', type: 'Opaque', immutable: false }, es, cur && asSecret(cur), esExists);
}

/** Writes the ConfigMap `d` describes when the live one differs (read at each fetch: there is
 *  no ConfigMap watch, so a hand edit is repaired at the next refresh). */
export async function writeConfigMap(rest: KubeRest, d: Desired, es: ExternalSecret, esExists: (name: string) => boolean): Promise<{ wrote: boolean; plan: Plan }> {
  const plan = planConfigMap(d, es, await rest.find<V1ConfigMap>(resourcePath(CONFIG_MAPS, { namespace: d.namespace, name: d.name })), esExists);
  if (plan.action === 'create') await rest.create(resourcePath(CONFIG_MAPS, { namespace: d.namespace }), asConfigMap(plan.body));
  else if (plan.action === 'replace') await rest.replace(resourcePath(CONFIG_MAPS, { namespace: d.namespace, name: d.name }), asConfigMap(plan.body));
  return { wrote: plan.action === 'create' || plan.action === 'replace', plan };
}

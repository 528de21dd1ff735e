// What a PushSecret asks for, checked without I/O: refresh interval, template engine,
// data entries, source selector; the remote key of an entry for one source Secret; the
// key under which status.syncedPushSecrets records an entry. See docs/pushsecret.md.
import type { KubernetesObject, V1LabelSelector } from '@kubernetes/client-node';
import type { PushSecret, PushSecretData, PushSecretDataTo } from '../../api/types.js';
import { dataToProblems } from './data-to.js';
import { selectTemplateEngine, type TemplateEngineChoice } from '../../templating/index.js';
import { DEFAULT_REFRESH_INTERVAL, refreshIntervalMs } from '../externalsecret/refresh.js';
import { nameProblem } from '../../kube/names.js';
import { generatorRefProblem } from '../../generators/index.js';

/** Held while remote entries this PushSecret wrote may still need deleting (deletionPolicy Delete). */
export const PUSH_FINALIZER = 'esi.dev/pushsecret-cleanup';

/** In `remoteRef.remoteKey` / `property`: the source Secret's name (label-selected sources). */
const NAME_PLACEHOLDER = /\{\{\s*\.Name\s*\}\}/g;

/** At most this many source Secrets per PushSecret: bounded work per reconcile. */
export const MAX_SOURCES = 500;

export interface PushSpec {
  intervalMs: number;
  engine: TemplateEngineChoice;
  updatePolicy: 'Replace' | 'IfNotExists';
  deletionPolicy: 'Delete' | 'None';
  data: PushSecretData[];
  dataTo: PushSecretDataTo[];
}

/** Whether a watched PushSecret update needs a reconcile: a new generation, labels or
 *  annotations, or the start of its deletion (status-only updates do not). */
export function pushSecretChanged(a: KubernetesObject | undefined, b: KubernetesObject): boolean {
  const meta = (o: KubernetesObject | undefined) => JSON.stringify([o?.metadata?.generation, o?.metadata?.labels ?? {}, o?.metadata?.annotations ?? {}, !!o?.metadata?.deletionTimestamp]);
  return meta(a) !== meta(b);
}

function refProblems(s: PushSecret['spec']): string[] {
  const problems: string[] = [];
  const sel = s.selector?.secret;
  const gen = s.selector?.generatorRef;
  if (gen) {
    // A generator's values are the source (docs/generators.md): new values at every push.
    const bad = generatorRefProblem(gen);
    if (bad) problems.push(`spec.selector.${bad}`);
    if (sel) problems.push('spec.selector: set secret or generatorRef, not both');
  } else if (!sel || (!sel.name && !sel.selector)) problems.push('spec.selector.secret needs name or selector (the Secret(s) to push, in this namespace)');
  else if (sel.name && sel.selector) problems.push('spec.selector.secret: set name or selector, not both');
  const badSource = sel?.name ? nameProblem(sel.name, 'subdomain') : undefined;
  if (badSource) problems.push(`spec.selector.secret.name ${badSource}`);
  if (!s.secretStoreRefs?.length) problems.push('spec.secretStoreRefs is empty: name at least one store');
  (s.secretStoreRefs ?? []).forEach((r, i) => {
    if (!r.name && !r.labelSelector) problems.push(`spec.secretStoreRefs[${i}] needs name or labelSelector`);
    const badStore = r.name ? nameProblem(r.name, 'subdomain') : undefined;
    if (badStore) problems.push(`spec.secretStoreRefs[${i}].name ${badStore}`);
    if (r.kind && r.kind !== 'SecretStore' && r.kind !== 'ClusterSecretStore') problems.push(`spec.secretStoreRefs[${i}].kind "${String(r.kind)}" must be SecretStore or ClusterSecretStore`);
  });
  return [...problems, ...dataProblems(s)];
}

/** What is wrong with spec.data and spec.dataTo (one of them must say what to push). */
function dataProblems(s: PushSecret['spec']): string[] {
  const problems: string[] = [];
  const data = s.data ?? [];
  if (!data.length && !s.dataTo?.length) problems.push('spec.data and spec.dataTo are empty: list what to push (data[].match.secretKey and remoteRef.remoteKey, or dataTo[].storeRef)');
  problems.push(...dataToProblems(s.dataTo ?? []));
  data.forEach((d, i) => {
    if (!d.match?.remoteRef?.remoteKey) problems.push(`spec.data[${i}].match.remoteRef.remoteKey is required`);
    if (d.conversionStrategy && d.conversionStrategy !== 'None' && d.conversionStrategy !== 'ReverseUnicode') {
      problems.push(`spec.data[${i}].conversionStrategy "${String(d.conversionStrategy)}" must be None or ReverseUnicode`);
    }
  });
  return problems;
}

/** The PushSecret's settings, or the problems (each naming the field and the fix). */
export function pushSpec(ps: PushSecret): { spec?: PushSpec; problems: string[] } {
  const s = ps.spec ?? ({} as PushSecret['spec']);
  const problems = refProblems(s);
  let intervalMs = 0;
  try {
    intervalMs = refreshIntervalMs(s.refreshInterval ?? DEFAULT_REFRESH_INTERVAL, 'spec.refreshInterval');
  } catch (err) {
    problems.push((err as Error).message);
  }
  let engine: TemplateEngineChoice = 'none';
  try {
    engine = selectTemplateEngine(ps.metadata.name!, ps.metadata.annotations, s.template);
  } catch (err) {
    problems.push((err as Error).message.replace(/^ExternalSecret "[^"]*": /, '').replace('spec.target.template', 'spec.template'));
  }
  const updatePolicy = s.updatePolicy ?? 'Replace';
  if (updatePolicy !== 'Replace' && updatePolicy !== 'IfNotExists') problems.push(`spec.updatePolicy "${String(updatePolicy)}" must be Replace or IfNotExists`);
  const deletionPolicy = s.deletionPolicy ?? 'None';
  if (deletionPolicy !== 'Delete' && deletionPolicy !== 'None') problems.push(`spec.deletionPolicy "${String(deletionPolicy)}" must be Delete or None`);
  const data = s.data ?? [];
  if (problems.length) return { problems };
  return { spec: { intervalMs, engine, updatePolicy, deletionPolicy, data, dataTo: s.dataTo ?? [] }, problems };
}

/** The data entry as pushed for the source Secret `source`: `{{ .Name }}` in the remote
 *  key or property becomes the Secret's name (one remote entry per selected Secret). */
export function forSource(d: PushSecretData, source: string): PushSecretData {
  const sub = (v: string) => v.replace(NAME_PLACEHOLDER, source);
  const remoteRef = { remoteKey: sub(d.match.remoteRef.remoteKey), ...(d.match.remoteRef.property ? { property: sub(d.match.remoteRef.property) } : {}) };
  return {
    match: { ...(d.match.secretKey !== undefined ? { secretKey: d.match.secretKey } : {}), remoteRef },
    ...(d.conversionStrategy ? { conversionStrategy: d.conversionStrategy } : {}),
    // Kept in status.syncedPushSecrets: a changed metadata is re-applied (checked per store
    // by the provider, src/providers/push-metadata.ts).
    ...(d.metadata !== undefined && d.metadata !== null ? { metadata: d.metadata } : {}),
  };
}

/** The key of an entry in status.syncedPushSecrets[store]: `remoteKey` or `remoteKey/property` (ESO's). */
export function entryKey(d: PushSecretData): string {
  const r = d.match.remoteRef;
  return r.property ? `${r.remoteKey}/${r.property}` : r.remoteKey;
}

/** A Kubernetes label selector as the `labelSelector` query parameter. */
export function selectorQuery(sel: V1LabelSelector): string {
  const parts = Object.entries(sel.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of sel.matchExpressions ?? []) {
    const values = (e.values ?? []).join(',');
    if (e.operator === 'In') parts.push(`${e.key} in (${values})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${values})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
    else throw new Error(`label selector operator "${e.operator}" must be In, NotIn, Exists or DoesNotExist`);
  }
  return parts.join(',');
}

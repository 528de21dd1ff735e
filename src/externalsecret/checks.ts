// What ESI requires of an ExternalSecret beyond the external-secrets.io schema, in one
// place for both consumers. ESI's CRDs accept every document ESO's accept; a document using
// a feature ESI does not serve is refused with the field and what ESI supports instead:
// by the webhook when a pod mounts it (so nothing admitted fails later in the agent) and by
// the reconciler as Ready=False (an ExternalSecret no webhook ever saw). Pure: spec in,
// problems out; Go templates in rewrite transforms are parsed (target.template is parsed by
// src/templating/eso.ts, which also chooses the engine).
import type { ExternalSecretData, ExternalSecretDataFromRemoteRef, ExternalSecretRewrite, ExternalSecretSpec, ExternalSecretTemplate, SecretStoreRef } from '../api/types.js';
import { compileGoRegexp } from '../providers/regexp.js';
import { parseGoTemplates } from '../templating/go/index.js';
import { nameProblem } from '../kube/names.js';
import { generatorRefProblem } from '../generators/index.js';

/** Bounds on the work one ExternalSecret asks of the agent and the reconciler. */
export const MAX_DATA_ENTRIES = 1000;
export const MAX_DATA_FROM_ENTRIES = 100;
export const MAX_REWRITES = 32;

/** One reason ESI cannot serve a spec. `message` is a whole phrase starting with `field`. */
export interface SpecProblem {
  /** Path of the offending field, e.g. `spec.dataFrom[0].rewrite[1].merge`. */
  field: string;
  message: string;
}

/** Who serves the ExternalSecret: the agent writes files, the reconciler a Secret object. */
export type Consumer = 'agent' | 'reconciler';

type Add = (field: string, rest: string) => void;

function checkRewrite(where: string, rw: ExternalSecretRewrite, add: Add, out: SpecProblem[]): void {
  const set = [rw.regexp && 'regexp', rw.transform && 'transform', rw.merge && 'merge'].filter(Boolean);
  if (set.length !== 1) add(where, `must set exactly one of regexp, transform or merge (has ${set.length ? set.join(', ') : 'none'})`);
  if (rw.merge?.strategy === 'JSON' && !rw.merge.into) add(`${where}.merge.into`, 'must name the key that receives the merged object (strategy JSON)');
  if (rw.regexp) {
    try {
      compileGoRegexp(rw.regexp.source);
    } catch (err) {
      out.push({ field: `${where}.regexp.source`, message: `${where}.regexp.source: ${(err as Error).message}` });
    }
  }
  if (rw.transform) {
    const field = `${where}.transform.template`;
    for (const e of parseGoTemplates([{ name: field, source: rw.transform.template ?? '' }])) {
      const at = e.line ? ` line ${e.line}${e.column ? `, column ${e.column}` : ''}` : '';
      out.push({ field, message: `${field}${at}: ${e.reason}` });
    }
  }
}

interface Sink {
  consumer: Consumer;
  add: Add;
  out: SpecProblem[];
}

/** Adds why an entry's own store (`sourceRef.storeRef`) cannot be served; true if it cannot. */
function storeRefProblem(where: string, ref: SecretStoreRef, consumer: Consumer, add: Add): boolean {
  if (consumer === 'agent') {
    add(`${where}.sourceRef.storeRef`, `is served by ESI's reconciler only (it writes a Secret); the agent mounts an ExternalSecret from one store: move the entry to an ExternalSecret whose spec.secretStoreRef names ${ref.kind ?? 'SecretStore'} "${ref.name}"`);
    return true;
  }
  const bad = nameProblem(ref.name ?? '', 'subdomain');
  if (bad) add(`${where}.sourceRef.storeRef.name`, bad);
  return !!bad;
}

/** `dataFrom[].sourceRef`: another store or a generator (docs/generators.md), both
 *  served by the reconciler. */
function checkSourceRef(where: string, d: ExternalSecretDataFromRemoteRef, { consumer, add, out }: Sink): void {
  const ref = d.sourceRef!;
  if (ref.storeRef && ref.generatorRef) return add(`${where}.sourceRef`, 'must set only one of storeRef or generatorRef');
  if (ref.storeRef) {
    if (!storeRefProblem(where, ref.storeRef, consumer, add)) checkExtractFind(where, d, add);
    return;
  }
  if (!ref.generatorRef) return add(`${where}.sourceRef`, 'must set storeRef or generatorRef');
  if (consumer === 'agent') return add(`${where}.sourceRef.generatorRef`, 'is served by ESI\'s reconciler only (it writes a Secret); the agent mounts store values');
  const problem = generatorRefProblem(ref.generatorRef);
  if (problem) out.push({ field: `${where}.sourceRef.generatorRef`, message: `${where}.sourceRef.${problem}` });
  if (d.extract || d.find) add(where, 'must set only one of extract, find or sourceRef.generatorRef');
}

function checkDataFrom(where: string, d: ExternalSecretDataFromRemoteRef, sink: Sink): void {
  const { add, out } = sink;
  if (d.sourceRef) checkSourceRef(where, d, sink);
  else checkExtractFind(where, d, add);
  const rewrites = d.rewrite ?? [];
  if (rewrites.length > MAX_REWRITES) add(`${where}.rewrite`, `has ${rewrites.length} steps; ESI allows at most ${MAX_REWRITES}`);
  else rewrites.forEach((rw, j) => checkRewrite(`${where}.rewrite[${j}]`, rw, add, out));
}

function checkExtractFind(where: string, d: ExternalSecretDataFromRemoteRef, add: Add): void {
  const set = [d.extract && 'extract', d.find && 'find'].filter(Boolean);
  if (set.length !== 1) add(where, `must set exactly one of extract or find (has ${set.length ? set.join(', ') : 'neither'})`);
  if (d.extract && !d.extract.key) add(`${where}.extract.key`, 'must not be empty');
  if (d.find && !d.find.name?.regexp && !d.find.path && !Object.keys(d.find.tags ?? {}).length) {
    add(`${where}.find`, 'must set name.regexp, path or tags');
  }
}

function checkData(where: string, d: ExternalSecretData, consumer: Consumer, add: Add): void {
  if (d.sourceRef?.generatorRef) add(`${where}.sourceRef.generatorRef`, 'is not implemented for spec.data (ESO neither); use spec.dataFrom[].sourceRef.generatorRef');
  else if (d.sourceRef && !d.sourceRef.storeRef) add(`${where}.sourceRef`, 'must set storeRef');
  else if (d.sourceRef?.storeRef) storeRefProblem(where, d.sourceRef.storeRef, consumer, add);
  if (!d.remoteRef?.key) add(`${where}.remoteRef.key`, 'must not be empty');
}

/** `spec.secretStoreRef`: a valid name; without it (the reconciler), every entry must name
 *  its own store or a generator (ESO). */
function checkDefaultStore(s: ExternalSecretSpec, consumer: Consumer, add: Add): void {
  const storeName = s.secretStoreRef?.name;
  const badStore = storeName !== undefined ? nameProblem(storeName, 'subdomain') : undefined;
  if (badStore) add('spec.secretStoreRef.name', badStore);
  if (consumer !== 'reconciler' || storeName) return;
  const fix = (where: string) => add(where, 'names no store: set spec.secretStoreRef, or this entry\'s sourceRef.storeRef');
  (s.data ?? []).forEach((d, i) => !d.sourceRef && fix(`spec.data[${i}]`));
  (s.dataFrom ?? []).forEach((d, i) => !d.sourceRef && fix(`spec.dataFrom[${i}]`));
}

/** Secret types the apiserver fills with credentials (a ServiceAccount token, a bootstrap
 *  token): a reconciler writing one would hand whoever may create an ExternalSecret a credential. */
const CREDENTIAL_TYPES = ['kubernetes.io/service-account-token', 'bootstrap.kubernetes.io/token'];

function checkTemplate(where: string, tpl: ExternalSecretTemplate | undefined, consumer: Consumer, add: Add): void {
  (tpl?.templateFrom ?? []).forEach((tf, i) => {
    const target = tf.target ?? 'Data';
    if ((tf.configMap || tf.secret) && target === 'Data' && consumer === 'agent') {
      // The reconciler reads them (src/externalsecret/template-sources.ts); the agent cannot.
      add(`${where}.templateFrom[${i}].${tf.configMap ? 'configMap' : 'secret'}`,
        `is not supported by ESI (the agent reads no ConfigMap or Secret; only the reconciler, writing a Secret, does); inline the template as templateFrom[${i}].literal or in target.template.data`);
    } else if (consumer === 'reconciler' && !['Data', 'Labels', 'Annotations'].includes(target)) {
      add(`${where}.templateFrom[${i}].target`, `${target} is not supported by ESI; use Data, Labels or Annotations`);
    }
  });
  if (consumer === 'reconciler' && tpl?.type && CREDENTIAL_TYPES.includes(tpl.type)) {
    add(`${where}.type`, `"${tpl.type}" is not allowed: the apiserver would put a credential into it; use another type`);
  }
}

/** `target.manifest` (docs/controller.md, "ConfigMap targets"): a v1 ConfigMap only, owned (or orphaned) and rewritten
 *  whole; what describes a Secret or another lifecycle is refused, naming the field. */
function checkManifest(spec: ExternalSecretSpec, add: Add): void {
  const target = spec.target!;
  const { apiVersion, kind } = target.manifest!;
  if (apiVersion !== 'v1' || kind !== 'ConfigMap') {
    return add('spec.target.manifest', `(${apiVersion ?? ''} ${kind ?? ''}) is not served by ESI: its reconciler writes Secrets and, where the operator enabled it, ConfigMaps (apiVersion v1, kind ConfigMap); remove it to get a Secret`);
  }
  const with_ = 'with spec.target.manifest (a ConfigMap)';
  if (target.creationPolicy === 'Merge') add('spec.target.creationPolicy', `Merge is not served ${with_}; use Owner or Orphan`);
  if (target.deletionPolicy && target.deletionPolicy !== 'Retain') add('spec.target.deletionPolicy', `${target.deletionPolicy} is not served ${with_}; use Retain`);
  if (target.immutable) add('spec.target.immutable', `is not served ${with_}; remove it`);
  if (target.template?.type) add('spec.target.template.type', `describes a Secret and is not served ${with_}; remove it`);
}

/** The reconciler writes a Secret: what of `target` it cannot honour. */
function checkTarget(spec: ExternalSecretSpec, add: Add): void {
  const target = spec.target;
  const badName = target?.name !== undefined ? nameProblem(target.name, 'subdomain') : undefined;
  if (badName) add('spec.target.name', `${badName} (the name of a Secret in this namespace)`);
  if (target?.manifest) checkManifest(spec, add);
  if (target?.creationPolicy === 'CreateOrMerge') add('spec.target.creationPolicy', 'CreateOrMerge is not supported by ESI; use Owner (create and own) or Merge (merge into an existing Secret)');
}

/** Every reason ESI cannot serve `spec` for `consumer`; empty when it can. */
export function externalSecretSpecProblems(spec: ExternalSecretSpec | undefined, consumer: Consumer = 'agent'): SpecProblem[] {
  const out: SpecProblem[] = [];
  const add: Add = (field, rest) => out.push({ field, message: `${field} ${rest}` });
  const s = spec ?? {};
  const data = s.data ?? [];
  const dataFrom = s.dataFrom ?? [];
  if (!data.length && !dataFrom.length) add('spec', `has neither spec.data nor spec.dataFrom; nothing to ${consumer === 'agent' ? 'mount' : 'sync'}`);
  // The reconciler serves syncWindows (src/controller/externalsecret/sync-windows.ts); an injected agent
  // refreshes all of a pod's files on one interval and does not.
  if (s.syncWindows && consumer === 'agent') add('spec.syncWindows', 'is not supported in pods (the agent refreshes on spec.refreshInterval and the esi.dev/refresh-interval annotation); ESI\'s reconciler serves it. Remove it to mount this ExternalSecret');
  if (data.length > MAX_DATA_ENTRIES) add('spec.data', `has ${data.length} entries; ESI allows at most ${MAX_DATA_ENTRIES}`);
  if (dataFrom.length > MAX_DATA_FROM_ENTRIES) add('spec.dataFrom', `has ${dataFrom.length} entries; ESI allows at most ${MAX_DATA_FROM_ENTRIES}`);
  if (data.length > MAX_DATA_ENTRIES || dataFrom.length > MAX_DATA_FROM_ENTRIES) return out;
  data.forEach((d, i) => checkData(`spec.data[${i}]`, d, consumer, add));
  dataFrom.forEach((d, i) => checkDataFrom(`spec.dataFrom[${i}]`, d, { consumer, add, out }));
  checkDefaultStore(s, consumer, add);
  checkTemplate('spec.target.template', s.target?.template, consumer, add);
  if (consumer === 'reconciler') checkTarget(s, add);
  return out;
}

/** A problem as users read it: `ExternalSecret "name": <field> <what to do>`. */
export function describeSpecProblem(esName: string, p: SpecProblem): string {
  return `ExternalSecret "${esName}": ${p.message}`;
}

// What ESI requires of an ExternalSecret beyond the external-secrets.io schema. ESI's CRDs
// accept every document ESO's accept; a document using a feature ESI does not serve is
// refused here, at admission of the pod that mounts it, with the field and what ESI
// supports instead, so that nothing admitted fails later in the agent. Go templates in
// rewrite transforms are parsed here (target.template: src/templating/eso.ts).
import type { ExternalSecret, ExternalSecretDataFromRemoteRef, ExternalSecretRewrite, ExternalSecretTemplate } from '../src/api/types.js';
import { compileGoRegexp } from '../src/providers/regexp.js';
import { parseGoTemplates } from '../src/templating/go/index.js';

/** Bounds on the work one ExternalSecret asks of the agent. */
export const MAX_DATA_ENTRIES = 1000;
export const MAX_DATA_FROM_ENTRIES = 100;
export const MAX_REWRITES = 32;

const NUL_POLICY = 'nullBytePolicy Fail is not supported by ESI (values with NUL bytes are delivered as they are, like Ignore); remove it';

function checkRewrite(where: string, rw: ExternalSecretRewrite, problems: string[]): void {
  const set = [rw.regexp && 'regexp', rw.transform && 'transform', rw.merge && 'merge'].filter(Boolean);
  if (rw.merge) problems.push(`${where}.merge is not supported by ESI; use regexp or transform rewrites`);
  else if (set.length !== 1) problems.push(`${where} must set exactly one of regexp or transform (has ${set.length ? set.join(', ') : 'neither'})`);
  if (rw.regexp) {
    try {
      compileGoRegexp(rw.regexp.source);
    } catch (err) {
      problems.push(`${where}.regexp.source: ${(err as Error).message}`);
    }
  }
  if (rw.transform) {
    for (const e of parseGoTemplates([{ name: `${where}.transform.template`, source: rw.transform.template ?? '' }])) problems.push(e.message);
  }
}

function checkDataFrom(where: string, d: ExternalSecretDataFromRemoteRef, problems: string[]): void {
  const set = [d.extract && 'extract', d.find && 'find', d.sourceRef && 'sourceRef'].filter(Boolean);
  if (set.length !== 1) problems.push(`${where} must set exactly one of extract or find (has ${set.length ? set.join(', ') : 'neither'})`);
  if (d.extract && !d.extract.key) problems.push(`${where}.extract.key must not be empty`);
  if (d.extract?.nullBytePolicy === 'Fail') problems.push(`${where}.extract.${NUL_POLICY}`);
  if (d.find && !d.find.name?.regexp && !d.find.path && !Object.keys(d.find.tags ?? {}).length) {
    problems.push(`${where}.find must set name.regexp, path or tags`);
  }
  if (d.find?.nullBytePolicy === 'Fail') problems.push(`${where}.find.${NUL_POLICY}`);
  const rewrites = d.rewrite ?? [];
  if (rewrites.length > MAX_REWRITES) problems.push(`${where}.rewrite has ${rewrites.length} steps; ESI allows at most ${MAX_REWRITES}`);
  else rewrites.forEach((rw, j) => checkRewrite(`${where}.rewrite[${j}]`, rw, problems));
}

function checkTemplate(where: string, tpl: ExternalSecretTemplate | undefined, problems: string[]): void {
  (tpl?.templateFrom ?? []).forEach((tf, i) => {
    if ((tf.configMap || tf.secret) && (tf.target ?? 'Data') === 'Data') {
      problems.push(`${where}.templateFrom[${i}].${tf.configMap ? 'configMap' : 'secret'} is not supported by ESI (the agent reads no ConfigMap or Secret); inline the template as templateFrom[${i}].literal or in target.template.data`);
    }
  });
}

/** Every reason ESI cannot serve `es` as the agent would; empty when it can. */
export function externalSecretProblems(es: ExternalSecret): string[] {
  const problems: string[] = [];
  const where = `ExternalSecret "${es.metadata.name}": spec`;
  const spec = es.spec ?? {};
  if (spec.syncWindows) problems.push(`${where}.syncWindows is not supported by ESI (the agent refreshes on spec.refreshInterval and the esi.dev/refresh-interval annotation); remove it`);
  const data = spec.data ?? [];
  const dataFrom = spec.dataFrom ?? [];
  if (data.length > MAX_DATA_ENTRIES) problems.push(`${where}.data has ${data.length} entries; ESI allows at most ${MAX_DATA_ENTRIES}`);
  if (dataFrom.length > MAX_DATA_FROM_ENTRIES) problems.push(`${where}.dataFrom has ${dataFrom.length} entries; ESI allows at most ${MAX_DATA_FROM_ENTRIES}`);
  if (problems.length) return problems;
  data.forEach((d, i) => {
    if (!d.remoteRef?.key) problems.push(`${where}.data[${i}].remoteRef.key must not be empty`);
    if (d.remoteRef?.nullBytePolicy === 'Fail') problems.push(`${where}.data[${i}].remoteRef.${NUL_POLICY}`);
  });
  dataFrom.forEach((d, i) => checkDataFrom(`${where}.dataFrom[${i}]`, d, problems));
  checkTemplate(`${where}.target.template`, spec.target?.template, problems);
  return problems;
}

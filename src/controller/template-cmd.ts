// `esi template`: renders an ExternalSecret's target.template offline, from data given on
// the command line instead of a store, and prints the Secret the reconciler would write. It
// runs the reconciler's own code: engine choice (selectTemplateEngine), rendering
// (renderExternalSecretTemplate), templateFrom sources (loadTemplateSources) and the Secret
// (desiredSecret, planSecret). Exit codes as every `esi` command (docs/cli.md): 0 printed,
// 1 the template failed (the message names the template, never a value), 2 bad input.
import type { V1Secret } from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import type { ExternalSecret } from '../api/types.js';
import { loadTemplateSources, templateSourceRefs, type SourceKind } from '../externalsecret/template-sources.js';
import { renderExternalSecretTemplate, selectTemplateEngine, TemplateEngine } from '../templating/index.js';
import { desiredSecret, planSecret } from './externalsecret/secret.js';

const HELP = `Usage: esi template -f FILE [-f FILE…] [--data FILE] [--set KEY=VALUE…] [-o yaml|json]

Renders an ExternalSecret's spec.target.template offline and prints the Secret the
reconciler would write. The files (multi-document YAML, "-" for stdin) hold exactly one
ExternalSecret, plus the ConfigMaps and Secrets its templateFrom entries read. The values
that the store would return are given by key (the keys the template sees):
  --data FILE       a YAML or JSON map of key: value (other values are written as JSON)
  --set KEY=VALUE   one key (repeatable; wins over --data)
Go templates (ESO's, the default) and handlebars (annotation esi.dev/template-engine) render
as in the cluster. Exit 0 with the Secret on stdout; 1 when the template fails (the message
names the template, never a value); 2 on unusable input.
`;

interface Obj {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

class UsageError extends Error {}

async function readText(file: string): Promise<string> {
  if (file !== '-') return readFile(file, 'utf8');
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function readObjects(files: string[]): Promise<Obj[]> {
  const out: Obj[] = [];
  for (const f of files) {
    for (const doc of parseAllDocuments(await readText(f).catch((e: Error) => Promise.reject(new UsageError(`${f}: ${e.message}`))))) {
      if (doc.errors.length) throw new UsageError(`${f}: ${doc.errors[0]!.message}`);
      const value = doc.toJS() as Obj | null;
      if (value && typeof value === 'object') out.push(value);
    }
  }
  return out;
}

/** The values the template sees: --data's map, then each --set. */
async function readData(file: string | undefined, sets: string[]): Promise<Record<string, Uint8Array>> {
  const enc = new TextEncoder();
  const data: Record<string, Uint8Array> = Object.create(null) as Record<string, Uint8Array>;
  if (file) {
    const docs = parseAllDocuments(await readText(file).catch((e: Error) => Promise.reject(new UsageError(`--data ${file}: ${e.message}`))));
    // The parser's messages quote the document, which holds values: say where, not what.
    if (docs.length !== 1 || docs[0]!.errors.length) throw new UsageError(`--data ${file}: not one YAML or JSON document`);
    const map = docs[0]!.toJS() as unknown;
    if (!map || typeof map !== 'object' || Array.isArray(map)) throw new UsageError(`--data ${file}: must be a map of key: value`);
    for (const [k, v] of Object.entries(map)) data[k] = enc.encode(typeof v === 'string' ? v : JSON.stringify(v));
  }
  for (const s of sets) {
    const at = s.indexOf('=');
    if (at <= 0) throw new UsageError(`--set must be KEY=VALUE (the key before the first "=")`);
    data[s.slice(0, at)] = enc.encode(s.slice(at + 1));
  }
  return data;
}

/** templateFrom's ConfigMaps and Secrets, from the files instead of the API. */
function sourceReader(objects: Obj[]) {
  return async (kind: SourceKind, _namespace: string, name: string) => {
    const obj = objects.find((o) => o.kind === (kind === 'configMap' ? 'ConfigMap' : 'Secret') && o.metadata?.name === name);
    if (!obj) return undefined;
    const decoded = kind === 'secret'
      ? Object.fromEntries(Object.entries(obj.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]))
      : { ...(obj.data ?? {}) };
    return { ...decoded, ...(obj.stringData ?? {}) };
  };
}

/** The Secret the reconciler would create for `es` from `data`. Throws Error (template) or UsageError. */
async function renderSecret(es: ExternalSecret, data: Record<string, Uint8Array>, objects: Obj[]): Promise<V1Secret> {
  const name = es.metadata?.name;
  if (!name) throw new UsageError('the ExternalSecret has no metadata.name');
  const namespace = es.metadata.namespace ?? 'default';
  es = { ...es, metadata: { ...es.metadata, namespace } };
  const template = es.spec?.target?.template;
  const choice = selectTemplateEngine(name, es.metadata.annotations, template);
  const sources = await loadTemplateSources(templateSourceRefs(template, namespace), namespace, sourceReader(objects));
  const rendered = renderExternalSecretTemplate(new TemplateEngine(), { name, template, choice }, data, { metadata: true, sources });
  const ref = es.spec?.secretStoreRef;
  const plan = planSecret(desiredSecret(es, { kind: ref?.kind ?? 'SecretStore', name: ref?.name ?? '' }, rendered), es, undefined, () => false);
  if (plan.action !== 'create') throw new Error(`ExternalSecret "${name}": creationPolicy ${es.spec?.target?.creationPolicy} writes no new Secret`);
  // Offline the ExternalSecret has no uid: an ownerReference without one is not what the
  // reconciler would write, so it is left out.
  if (!es.metadata.uid) delete plan.body.metadata!.ownerReferences;
  return plan.body;
}

export async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        file: { type: 'string', short: 'f', multiple: true },
        data: { type: 'string' },
        set: { type: 'string', multiple: true },
        output: { type: 'string', short: 'o', default: 'yaml' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    return (process.stderr.write(`esi template: ${(err as Error).message}\n\n${HELP}`), 2);
  }
  if (values.help) return (process.stdout.write(HELP), 0);
  if (!values.file?.length) return (process.stderr.write(`esi template: at least one -f FILE is required\n\n${HELP}`), 2);
  if (values.output !== 'yaml' && values.output !== 'json') return (process.stderr.write(`esi template: -o must be yaml or json, got "${values.output}"\n`), 2);
  try {
    const objects = await readObjects(values.file);
    const found = objects.filter((o) => o.kind === 'ExternalSecret');
    if (found.length !== 1) throw new UsageError(`expected exactly one ExternalSecret in the input, found ${found.length}`);
    const secret = await renderSecret(found[0] as unknown as ExternalSecret, await readData(values.data, values.set ?? []), objects);
    process.stdout.write(values.output === 'json' ? `${JSON.stringify(secret, null, 2)}\n` : stringify(secret));
    return 0;
  } catch (err) {
    process.stderr.write(`esi template: ${(err as Error).message}\n`);
    return err instanceof UsageError ? 2 : 1;
  }
}

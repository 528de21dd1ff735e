// `esi inject -f FILE [-f FILE…]`: offline preview of the webhook. Reads Pods and workloads
// (Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs, CronJobs: their pod templates)
// and the ExternalSecrets, stores and Namespaces they need from YAML files, and runs each
// pod through the very same admission code path (admit). Prints the mutated objects (exit 0)
// or every denial (stderr, exit 1; nothing on stdout, so a pipe to `kubectl apply -f -` that
// does not check the status applies nothing half-injected).
import type { V1Namespace, V1Pod } from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import type { ClusterSecretStore, ExternalSecret, SecretStore } from '../src/api/types.js';
import { isObject, type Json } from '../src/json-object.js';
import { admit } from './admission.js';
import { INJECT_LABEL } from '../src/pod-contract/annotations.js';
import { AGENT_UID, parseRunAsUser, type AgentSettings } from './mutate.js';
import { joinProblems } from '../src/pod-contract/parse.js';
import { podShapeProblems } from './pod-shape.js';
import type { ObjectLookup } from './resolve.js';
import { flattenLists, isWorkload, templatePod, WORKLOAD_KINDS, workloadName, type TemplatePod } from './workloads.js';

const HELP = `Usage: esi inject -f FILE [-f FILE…] [-o yaml|json] [--agent-image IMAGE]
                  [--token-audience AUD] [--agent-run-as-user UID|auto]

Prints the pods and workloads of the files as ESI's webhook would have them. The files
(multi-document YAML or JSON, List objects, "-" for stdin) hold Pods and workloads
(${WORKLOAD_KINDS.join(', ')}),
whose pod templates are injected in the workload's namespace, plus the ExternalSecrets,
SecretStores, ClusterSecretStores and Namespaces they need, which are read and not printed.
A pod or template without the label esi.dev/inject: "true" is printed unchanged (said on
stderr). Exit 0 with the objects on stdout (YAML documents; -o json: the object, or a List);
exit 1 with every denial on stderr and nothing on stdout; exit 2 on unusable input.
`;

interface Obj {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
}

export class ManifestLookup implements ObjectLookup {
  constructor(private readonly objects: Obj[]) {}
  private find<T>(kind: string, name: string, namespace?: string): T | undefined {
    return this.objects.find((o) => o.kind === kind && o.metadata?.name === name &&
      (namespace === undefined || (o.metadata?.namespace ?? 'default') === namespace)) as T | undefined;
  }
  externalSecret(ns: string, name: string) {
    return this.find<ExternalSecret>('ExternalSecret', name, ns);
  }
  secretStore(ns: string, name: string) {
    return this.find<SecretStore>('SecretStore', name, ns);
  }
  clusterSecretStore(name: string) {
    return this.find<ClusterSecretStore>('ClusterSecretStore', name);
  }
  namespace(name: string): V1Namespace {
    // A Namespace not given is assumed to exist without labels.
    return this.find<V1Namespace>('Namespace', name) ?? { metadata: { name } };
  }
}

async function readManifests(files: string[]): Promise<Obj[]> {
  const out: unknown[] = [];
  for (const f of files) {
    const text = f === '-' ? await readStdin() : await readFile(f, 'utf8');
    for (const doc of parseAllDocuments(text)) {
      if (doc.errors.length) throw new Error(`${f}: ${doc.errors[0]!.message}`);
      out.push(doc.toJS());
    }
  }
  return flattenLists(out).filter(isObject) as Obj[];
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

type Outcome =
  | { kind: 'ok'; object: unknown; notes: string[] }
  | { kind: 'denied' | 'malformed'; message: string };

interface Target extends Omit<TemplatePod, 'put'> {
  put(pod: V1Pod): unknown;
  /** `Deployment "web"`, or undefined for a Pod (whose messages are those of a single pod). */
  workload?: Json;
}

function targetOf(obj: Obj): Target | { problems: string[] } {
  if (obj.kind !== 'Pod') {
    const t = templatePod(obj as Json);
    return 'problems' in t ? t : { ...t, workload: obj as Json };
  }
  // Read before the shape check, used only after it passed.
  const pod = obj as V1Pod;
  return { pod, namespace: pod.metadata?.namespace ?? 'default', field: '', put: (p) => p };
}

const VAULT_PREFIX = 'vault.hashicorp.com/';

/** One Pod or workload through the webhook's admission. */
function injectOne(obj: Obj, lookup: ObjectLookup, agent: AgentSettings): Outcome {
  const target = targetOf(obj);
  const who = obj.kind === 'Pod' ? undefined : workloadName(obj as Json);
  const malformed = (problems: string[]): Outcome => ({ kind: 'malformed', message: `esi inject: ${who ? `${who} is` : 'the Pod is'} malformed: ${joinProblems(problems)}` });
  if ('problems' in target) return malformed(target.problems);
  // Malformed input is exit 2 (bad input), not a denial (exit 1); the problems name the
  // template's fields as the user wrote them (spec.template.spec.containers).
  const shape = podShapeProblems(target.pod);
  if (shape.length) return malformed(target.field ? shape.map((p) => `${target.field}.${p}`) : shape);
  const result = admit(target.pod, { namespace: target.namespace, lookup, resolve: {}, agent });
  if (result.kind === 'denied') return { kind: 'denied', message: who ? `${who}: ${result.message}` : result.message };
  const subject = who ? `${who}: its pod template` : 'the pod';
  const notes: string[] = [];
  if (result.kind === 'skipped') notes.push(`esi inject: ${subject} is not labelled ${INJECT_LABEL}: "true"; printed unchanged${misplacedLabel(target)}`);
  if (result.kind === 'unchanged') notes.push(`esi inject: ${subject} is already injected; printed unchanged`);
  if (result.kind === 'moved') notes.push(`esi inject: ${subject} is already injected; its agent moved after the pod's native sidecars`);
  if (Object.keys(target.pod.metadata?.annotations ?? {}).some((k) => k.startsWith(VAULT_PREFIX))) {
    notes.push(`esi inject: ${subject} carries ${VAULT_PREFIX} annotations, which ESI does not read (docs/migration.md maps them to ESI's)`);
  }
  for (const w of result.kind === 'mutated' ? result.warnings : []) notes.push(`Warning: ${who ? `${who}: ` : ''}${w}`);
  const object = result.kind === 'mutated' || result.kind === 'moved' ? target.put(result.pod) : obj;
  return { kind: 'ok', object, notes };
}

/** The commonest slip with workloads: the opt-in label on the workload, not its template. */
function misplacedLabel(target: Target): string {
  const labels = isObject(target.workload?.metadata) ? target.workload.metadata.labels : undefined;
  return isObject(labels) && labels[INJECT_LABEL] === 'true' ? ` (the label is on the ${String(target.workload!.kind)}; the webhook reads it on ${target.field}.metadata.labels)` : '';
}

/** YAML documents, or JSON: the one object, or a List of them as `kubectl get -o json`
 *  prints; either form pipes to `kubectl apply -f -`. */
function render(objects: unknown[], output: 'yaml' | 'json'): string {
  if (output === 'yaml') return objects.map((o) => stringify(o)).join('---\n');
  return `${JSON.stringify(objects.length === 1 ? objects[0] : { apiVersion: 'v1', kind: 'List', items: objects }, null, 2)}\n`;
}

export async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      file: { type: 'string', short: 'f', multiple: true },
      output: { type: 'string', short: 'o', default: 'yaml' },
      'agent-image': { type: 'string', default: 'ghcr.io/esi-dev/esi:latest' },
      'token-audience': { type: 'string', default: 'esi' },
      'agent-run-as-user': { type: 'string', default: String(AGENT_UID) },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return (process.stdout.write(HELP), 0);
  if (!values.file?.length) return (process.stderr.write(`esi inject: at least one -f FILE is required\n\n${HELP}`), 2);
  const output = values.output;
  if (output !== 'yaml' && output !== 'json') return (process.stderr.write(`esi inject: -o must be yaml or json, got "${output}"\n`), 2);
  let objects: Obj[];
  let runAsUser: number | 'auto';
  try {
    runAsUser = parseRunAsUser(values['agent-run-as-user']);
    objects = await readManifests(values.file);
  } catch (err) {
    return (process.stderr.write(`esi inject: ${(err as Error).message}\n`), 2);
  }
  const targets = objects.filter((o) => o.kind === 'Pod' || isWorkload(o));
  if (!targets.length) return (process.stderr.write(`esi inject: expected a Pod or a workload (${WORKLOAD_KINDS.join(', ')}) in the input, found none\n`), 2);
  const lookup = new ManifestLookup(objects);
  const agent: AgentSettings = { image: values['agent-image']!, defaultTokenAudience: values['token-audience']!, runAsUser };
  const outcomes = targets.map((o) => injectOne(o, lookup, agent));
  // Bad input first (exit 2), then denials (exit 1); every one said, nothing printed.
  for (const failed of ['malformed', 'denied'] as const) {
    const messages = outcomes.flatMap((o) => (o.kind === failed ? [o.message] : []));
    if (messages.length) return (process.stderr.write(messages.map((m) => `${m}\n`).join('')), failed === 'malformed' ? 2 : 1);
  }
  const ok = outcomes.filter((o) => o.kind === 'ok');
  for (const o of ok) for (const n of o.notes) process.stderr.write(`${n}\n`);
  process.stdout.write(render(ok.map((o) => o.object), output));
  return 0;
}

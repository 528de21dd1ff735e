// `esi inject -f FILE [-f FILE…]`: offline preview of the webhook. Reads one Pod and the
// ExternalSecrets, stores and Namespace it needs from YAML files and runs the very same
// admission code path. Prints the mutated Pod (exit 0) or the denial (stderr, exit 1).
import type { V1Namespace, V1Pod } from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import type { ClusterSecretStore, ExternalSecret, SecretStore } from '../src/api/types.js';
import { admit } from './admission.js';
import { AGENT_UID, parseRunAsUser } from './mutate.js';
import { joinProblems } from './parse.js';
import { podShapeProblems } from './pod-shape.js';
import type { ObjectLookup } from './resolve.js';

const HELP = `Usage: esi inject -f FILE [-f FILE…] [--agent-image IMAGE] [--token-audience AUD]
                  [--agent-run-as-user UID|auto]

Prints the pod as ESI's webhook would store it. The files (multi-document YAML, "-" for
stdin) hold exactly one Pod plus the ExternalSecrets, SecretStores, ClusterSecretStores
and Namespace it needs. Exit 0 with the mutated Pod on stdout; exit 1 with the webhook's
denial message on stderr; exit 2 on unreadable input.
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
  const out: Obj[] = [];
  for (const f of files) {
    const text = f === '-' ? await readStdin() : await readFile(f, 'utf8');
    for (const doc of parseAllDocuments(text)) {
      if (doc.errors.length) throw new Error(`${f}: ${doc.errors[0]!.message}`);
      const value = doc.toJS() as Obj | null;
      if (value && typeof value === 'object') out.push(value);
    }
  }
  return out;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      file: { type: 'string', short: 'f', multiple: true },
      'agent-image': { type: 'string', default: 'ghcr.io/esi-dev/esi:latest' },
      'token-audience': { type: 'string', default: 'esi' },
      'agent-run-as-user': { type: 'string', default: String(AGENT_UID) },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return (process.stdout.write(HELP), 0);
  if (!values.file?.length) return (process.stderr.write(`esi inject: at least one -f FILE is required\n\n${HELP}`), 2);
  let objects: Obj[];
  let runAsUser: number | 'auto';
  try {
    runAsUser = parseRunAsUser(values['agent-run-as-user']);
    objects = await readManifests(values.file);
  } catch (err) {
    return (process.stderr.write(`esi inject: ${(err as Error).message}\n`), 2);
  }
  const pods = objects.filter((o) => o.kind === 'Pod') as V1Pod[];
  if (pods.length !== 1) return (process.stderr.write(`esi inject: expected exactly one Pod in the input, found ${pods.length}\n`), 2);
  const pod = pods[0]!;
  // Malformed input is exit 2 (bad input), not a denial (exit 1).
  const shape = podShapeProblems(pod);
  if (shape.length) return (process.stderr.write(`esi inject: the Pod is malformed: ${joinProblems(shape)}\n`), 2);
  const namespace = pod.metadata?.namespace ?? 'default';
  const result = admit(pod, {
    namespace, lookup: new ManifestLookup(objects), resolve: {},
    agent: { image: values['agent-image']!, defaultTokenAudience: values['token-audience']!, runAsUser },
  });
  if (result.kind === 'denied') return (process.stderr.write(`${result.message}\n`), 1);
  if (result.kind === 'skipped') process.stderr.write('esi inject: the pod is not labelled esi.dev/inject: "true"; printed unchanged\n');
  if (result.kind === 'unchanged') process.stderr.write('esi inject: the pod is already injected; printed unchanged\n');
  if (result.kind === 'moved') process.stderr.write('esi inject: the pod is already injected; its agent moved after the pod\'s native sidecars\n');
  for (const w of result.kind === 'mutated' ? result.warnings : []) process.stderr.write(`Warning: ${w}\n`);
  process.stdout.write(stringify(result.kind === 'mutated' || result.kind === 'moved' ? result.pod : pod));
  return 0;
}

// `esi migrate check`: read-only, against the live cluster with the operator's kubeconfig;
// says, before anything is switched, what ESI will serve, serve differently or refuse, and
// whether uninstalling ESO's Helm release would delete the CRDs (src/migrate/check.ts).
// Exit 0 when nothing is refused or unsafe, 1 otherwise, 2 for usage (docs/cli.md).
import { parseArgs } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { AnySecretStore, ExternalSecret } from '../api/types.js';
import { bool, checkFlags, loadKubeConfig, oneOf } from '../flags.js';
import { pagedList } from '../kube/list.js';
import { CLUSTER_SECRET_STORES, CUSTOM_RESOURCE_DEFINITIONS, EXTERNAL_SECRETS, SECRET_STORES, resourcePath } from '../kube/paths.js';
import { isKubeStatus, KubeRest } from '../kube/rest.js';
import { UsageError } from '../usage.js';
import { failing, migrationCheck, type CrdObject, type Finding } from './check.js';

const HELP = `Usage: esi migrate check [options]

Reads the cluster (nothing is written) and prints, for every external-secrets.io CRD, store
and ExternalSecret, whether ESI serves it as is, differently, or refuses it (with the reason
and the fix), and whether uninstalling ESO's Helm release would delete the CRDs.

  --kubeconfig FILE              (default: in-cluster, then $KUBECONFIG)
  -o, --output text|json         (default text)
  --controller-class NAME        the class ESI will serve (default esi)
  --claim-unclassed BOOL         whether ESI will serve stores without spec.controller (default false)
  --allow-ambient-identity BOOL  as the controller will run (default false)

Exit status: 0 nothing refused or unsafe, 1 something is, 2 usage.
`;

const OPTIONS = {
  kubeconfig: { type: 'string' },
  output: { type: 'string', short: 'o', default: 'text' },
  'controller-class': { type: 'string', default: 'esi' },
  'claim-unclassed': { type: 'string', default: 'false' },
  'allow-ambient-identity': { type: 'string', default: 'false' },
  help: { type: 'boolean', short: 'h' },
} as const;

async function list<T>(rest: KubeRest, path: string): Promise<T[]> {
  try {
    return (await pagedList(rest, path, (o: KubernetesObject) => o)).items as T[];
  } catch (err) {
    if (isKubeStatus(err, 404)) return []; // the CRD is not installed: nothing of that kind
    throw err;
  }
}

function text(findings: Finding[]): string {
  const where = (f: Finding) => `${f.kind}/${f.namespace ? `${f.namespace}/` : ''}${f.name}`;
  const lines = findings.map((f) => `${f.verdict.toUpperCase().padEnd(11)} ${where(f)}${f.reason ? `\n            ${f.reason}` : ''}${f.fix ? `\n            fix: ${f.fix}` : ''}`);
  const count = (v: string) => findings.filter((f) => f.verdict === v).length;
  const summary = ['served', 'different', 'refused', 'unsafe', 'other-class'].map((v) => `${count(v)} ${v}`).join(', ');
  return `${lines.join('\n')}\n\n${summary}\n`;
}

export async function main(argv: string[]): Promise<number> {
  const { values: v, positionals } = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: true });
  if (v.help || positionals.length === 0) {
    process.stdout.write(HELP);
    return v.help ? 0 : 2;
  }
  if (positionals[0] !== 'check' || positionals.length > 1) throw new UsageError(`unknown migrate command "${positionals.join(' ')}" (esi migrate check)`);
  const f = checkFlags(() => ({
    output: oneOf('output', v.output!, ['text', 'json'] as const),
    claimUnclassed: bool('claim-unclassed', v['claim-unclassed']!),
    allowAmbientIdentity: bool('allow-ambient-identity', v['allow-ambient-identity']!),
  }));
  const rest = new KubeRest(loadKubeConfig(v.kubeconfig));
  try {
    const [crds, stores, clusterStores, externalSecrets] = await Promise.all([
      list<CrdObject>(rest, resourcePath(CUSTOM_RESOURCE_DEFINITIONS)),
      list<AnySecretStore>(rest, resourcePath(SECRET_STORES)),
      list<AnySecretStore>(rest, resourcePath(CLUSTER_SECRET_STORES)),
      list<ExternalSecret>(rest, resourcePath(EXTERNAL_SECRETS)),
    ]);
    for (const s of stores) s.kind = 'SecretStore';
    for (const s of clusterStores) s.kind = 'ClusterSecretStore';
    const findings = migrationCheck({
      crds, stores: [...stores, ...clusterStores], externalSecrets, controllerClass: v['controller-class']!,
      claimUnclassed: f.claimUnclassed, allowAmbientIdentity: f.allowAmbientIdentity,
    });
    process.stdout.write(f.output === 'json' ? `${JSON.stringify({ findings, ok: !failing(findings) }, null, 2)}\n` : text(findings));
    return failing(findings) ? 1 : 0;
  } finally {
    rest.close();
  }
}

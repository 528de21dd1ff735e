// `npm run bench:fleet`: N injected agents as real processes (`node bin/esi.js agent`, default
// 200) against a store stand-in that counts reads (agents.ts), with the controller's real
// fleet decisions (src/controller/fleet/fleet.ts) in this process. The pod cache and the
// source watch are emulated: the Fleet sees N injected pods and the stand-in as the
// Kubernetes-provider store it stands for; each pod patch it makes is counted as one apiserver
// write and lands in that agent's channel files the way the kubelet projects them (the
// kubelet's own hop, 0.2 s at p50 on the test node, is measured by
// test/e2e/node/channel-latency.test.ts and added in the model). Side by side in one run:
//  1. store reads/s with each pod polling at its own interval;
//  2. a change → the new file in all N pods, polling only;
//  3. with a read budget on the store: the floors the Fleet writes, then reads/s;
//  4. a change → the new file in all N pods through change generations;
//  5. the AWS path (aws.ts): N agents reading Secrets Manager on moto, the change told through
//     EventBridge → the operator's SQS queue → the controller's queue reader;
// the agents' total RSS, and the model (model.ts) checked against the measured points.
// `--paths kubernetes,aws` (the default) picks the paths; BENCHMARKS.md is written only
// when both ran.
// Results: BENCHMARKS.md "Fleet" (with the machine and load); `--no-write` prints only.
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import type { V1Pod } from '@kubernetes/client-node';
import type { AnySecretStore, ExternalSecret } from '../../src/api/types.js';
import { Fleet } from '../../src/controller/fleet/fleet.js';
import { CHANGE_NOTIFICATIONS_ANNOTATION, READ_BUDGET_ANNOTATION } from '../../src/controller/fleet/reads.js';
import { machineInfo, machineMarkdown } from '../lib/machine.js';
import { markdownTable, writeSection } from '../lib/markdown.js';
import { agentConfig, arrival, fileOf, keysOf, project, quantile, rssOf, startAgent, startStandIn, type Agent } from './agents.js';
import { modelRows, type Measured } from './model.js';
import { measureAws, type AwsResult } from './aws.js';

const ROOT = join(import.meta.dirname, '..', '..');
const { values: opts } = parseArgs({ options: {
  agents: { type: 'string', default: '200' }, refresh: { type: 'string', default: '10' }, budget: { type: 'string', default: '600/m' },
  groups: { type: 'string', default: '20' }, window: { type: 'string', default: '60' }, 'patch-qps': { type: 'string', default: '100' },
  paths: { type: 'string', default: 'kubernetes,aws' }, 'no-write': { type: 'boolean' },
} });
const PATHS = new Set(opts.paths!.split(',').map((p) => p.trim()));
const N = Number(opts.agents);
const REFRESH = Number(opts.refresh);
const GROUPS = Number(opts.groups);
const WINDOW_S = Number(opts.window);
const load = () => loadavg().map((l) => l.toFixed(1)).join(' ');
const log = (msg: string) => process.stdout.write(`${new Date().toISOString()} ${msg} (load ${load()})\n`);
const until = async (what: string, cond: () => Promise<boolean>, ms: number) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
};

const standIn = await startStandIn();
const dir = await mkdtemp(join(tmpdir(), 'esi-fleet-'));
const agents: Agent[] = [];
const cleanup = async () => {
  for (const a of agents) a.proc.kill('SIGTERM');
  await standIn.close();
  await rm(dir, { recursive: true, force: true });
};
process.on('SIGINT', () => void cleanup().then(() => process.exit(130)));

/** Reads/s the stand-in counted over the last `seconds`, from `now`. */
async function readRate(seconds: number): Promise<number> {
  const from = Date.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return standIn.reads.filter((t) => t >= from).length / seconds;
}

/** Steps 1–4: the Kubernetes path with the store stand-in. */
async function kubernetesPath() {
  standIn.set('shared', 'v1');
  for (let g = 0; g < GROUPS; g++) standIn.set(`group-${g}`, `g${g}-v1`);
  log(`starting ${N} agents (refresh ${REFRESH}s)`);
  for (let i = 0; i < N; i++) agents.push(await startAgent(dir, i, agentConfig(i, { url: standIn.url, refreshSeconds: REFRESH, groups: GROUPS })));
  await until('every first render', async () => (await Promise.all(agents.map((a) => fileOf(a, 'shared')))).every((v) => v === 'v1'), 600_000);
  const rss = rssOf(agents);
  log(`all rendered; RSS ${(rss / 2 ** 20).toFixed(0)} MiB`);

  // 1. polling at the own interval (after one full period, so start-up reads are out).
  await new Promise((r) => setTimeout(r, REFRESH * 1000));
  const pollingRate = await readRate(WINDOW_S);
  log(`polling: ${pollingRate.toFixed(2)} reads/s`);

  // 2. a change, polling only.
  let t0 = Date.now();
  standIn.set('shared', 'v2');
  const polled = await arrival(agents, 'shared', 'v2', t0, REFRESH * 3000);
  log(`change by polling: p50 ${quantile(polled, 0.5)} ms, p99 ${quantile(polled, 0.99)} ms`);

  // 3. the budget, through the real fleet decisions.
  let writes = 0;
  /** Agent → when its change generation was projected (the kubelet's write, here in-process). */
  const projectedAt = new Map<number, number>();
  /** Agent → when the Fleet asked for its patch (what the controller decides and paces). */
  const patchedAt = new Map<number, number>();
  const versions = new Map([['shared', '1'], ...Array.from({ length: GROUPS }, (_, g) => [`group-${g}`, '1'] as [string, string])]);
  const store = {
    apiVersion: 'external-secrets.io/v1', kind: 'SecretStore',
    metadata: { name: 'standin', namespace: 'fleet', annotations: { [READ_BUDGET_ANNOTATION]: opts.budget!, [CHANGE_NOTIFICATIONS_ANNOTATION]: 'true' } },
    spec: { provider: { kubernetes: { remoteNamespace: 'fleet' } } },
  } as unknown as AnySecretStore;
  const es = (i: number) => ({ metadata: { name: 'app', namespace: 'fleet' }, spec: { secretStoreRef: { name: 'standin' }, data: keysOf(i, GROUPS).map((k) => ({ secretKey: k, remoteRef: { key: k } })) } }) as unknown as ExternalSecret;
  const fleet = new Fleet({
    logger: pino({ level: 'warn' }),
    // One ExternalSecret per pod stands for the pod's own view (the group key differs by pod).
    externalSecret: (_ns, name) => es(Number(name.slice('app-'.length))),
    store: () => store, reconcilerRate: () => 0, sourceVersion: (s) => versions.get(s.name),
    patchPod: async (_ns, name, ann) => {
      writes++;
      const a = agents[Number(name.slice('pod-'.length))]!;
      if (ann['esi.dev/refresh-floor'] !== undefined) await project(a, 'refresh-floor', ann['esi.dev/refresh-floor'] ?? '');
      if (ann['esi.dev/change-generation']) {
        patchedAt.set(a.index, Date.now());
        await project(a, 'change-generation', ann['esi.dev/change-generation']);
        projectedAt.set(a.index, Date.now());
      }
    },
    patchQps: Number(opts['patch-qps']), debounceMs: 50,
  });
  const pod = (i: number): V1Pod => ({ metadata: { namespace: 'fleet', name: `pod-${i}`, annotations: {
    'esi.dev/injected': 'native-sidecar', 'esi.dev/secrets': `app-${i}`, 'esi.dev/refresh-interval': `${REFRESH}s` } } });
  for (let i = 0; i < N; i++) fleet.observePod(pod(i), 'add');
  fleet.recompute();
  await until('the floors and first generations written', async () => writes >= N, 120_000);
  const setupWrites = writes;
  const floor = (await import('node:fs/promises')).readFile(join(agents[0]!.root, '/var/run/esi/channel/refresh-floor'), 'utf8');
  const floorText = await floor;
  log(`budget ${opts.budget}: floor ${floorText}, ${setupWrites} pod writes`);
  // Let the first generations' fetches and one floor period pass before counting.
  await new Promise((r) => setTimeout(r, (Number.parseInt(floorText, 10) + 2) * 1000));
  const budgetRate = await readRate(Math.max(WINDOW_S, 2 * Number.parseInt(floorText, 10)));
  log(`with the budget: ${budgetRate.toFixed(2)} reads/s`);

  // 4. a change through change generations.
  writes = 0;
  projectedAt.clear();
  patchedAt.clear();
  t0 = Date.now();
  standIn.set('shared', 'v3');
  versions.set('shared', '2');
  fleet.changed(t0);
  const arrived = new Map<number, number>();
  const notified = await arrival(agents, 'shared', 'v3', t0, 120_000, arrived);
  const changeWrites = writes;
  // Where the time goes: the controller's fan-out (change → the pod's channel file) and the
  // agent's part (channel file → new file: noticing it, the fetch, the render, the write).
  const sorted = (xs: Iterable<number>) => [...xs].sort((a, b) => a - b);
  const fanOut = sorted([...patchedAt.values()].map((p) => p - t0));
  const projection = sorted([...projectedAt].map(([i, p]) => p - (patchedAt.get(i) ?? p)));
  const agentPart = sorted([...arrived].map(([i, ms]) => t0 + ms - (projectedAt.get(i) ?? t0)));
  log(`change by notification: p50 ${quantile(notified, 0.5)} ms, p99 ${quantile(notified, 0.99)} ms, ${changeWrites} pod writes; fan-out p50 ${quantile(fanOut, 0.5)} / p99 ${quantile(fanOut, 0.99)} ms, the bench's projection p99 ${quantile(projection, 0.99)} ms, agent p50 ${quantile(agentPart, 0.5)} / p99 ${quantile(agentPart, 0.99)} ms`);
  fleet.stop();

  const m: Measured = {
    agents: N, refreshSeconds: REFRESH, keysPerPod: 2, budgetPerSecond: 0, pollingRate, budgetRate,
    polledP50: quantile(polled, 0.5), polledP99: quantile(polled, 0.99), notifiedP50: quantile(notified, 0.5), notifiedP99: quantile(notified, 0.99),
    writesPerChange: changeWrites, patchQps: Number(opts['patch-qps']), rssBytes: rss,
  };
  m.budgetPerSecond = (await import('../../src/controller/fleet/budget.js')).parseReadBudget(opts.budget!);
  const agentsRss = rss;
  // The AWS path's agents need the CPU and memory: these are stopped first.
  for (const a of agents.splice(0)) a.proc.kill('SIGTERM');
  return { m, floorText, setupWrites, changeWrites, fanOut, projection, agentPart, rss: agentsRss };
}

const ms = (x: number) => `${(x / 1000).toFixed(2)} s`;
const p5099 = (xs: readonly number[]) => `${ms(quantile(xs, 0.5))} / ${ms(quantile(xs, 0.99))}`;
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB (${(bytes / N / 2 ** 20).toFixed(1)} MiB each)`;

try {
  const k8s = PATHS.has('kubernetes') ? await kubernetesPath() : undefined;
  const aws: AwsResult | undefined = PATHS.has('aws')
    ? await measureAws({ agents: N, groups: GROUPS, patchQps: Number(opts['patch-qps']), dir: join(dir, 'aws'), log })
    : undefined;
  if (!k8s || !aws) {
    if (aws) log(`AWS path: change → new file in all pods p50 / p99 ${p5099(aws.arrived)}`);
    log('BENCHMARKS.md is written only when both paths ran');
  } else {
    const { m, floorText, setupWrites, changeWrites, fanOut, projection, agentPart, rss } = k8s;
    const machine = machineInfo();
    const body = `${machineMarkdown(machine)}

\`npm run bench:fleet -- --agents ${N} --refresh ${REFRESH} --budget ${opts.budget} --patch-qps ${opts['patch-qps']}\`: ${N} agents (each reads 2 keys: one all pods share, one of ${GROUPS} group keys), own refresh ${REFRESH} s; load average at the end ${load()}.
The Kubernetes path reads a store stand-in that counts reads (the source watch emulated: the change is handed to the controller's fleet decisions as the watch would). The AWS path is run next, with ${N} other agents reading AWS Secrets Manager on moto ${aws.motoVersion} (refresh 1 h, so only the notification brings the change): the bench changes the secret with PutSecretValue and, because moto emits no CloudTrail record, sends the event CloudTrail would with EventBridge PutEvents; it reaches the operator's SQS queue through the rule, and the controller's queue reader (long polls, its own credentials) hands it to the same fleet decisions.

${markdownTable(['', 'polling (own interval)', `read budget ${opts.budget} (floor ${floorText}), Kubernetes notifications`, 'AWS Secrets Manager on moto, EventBridge → SQS'], [
      ['store reads/s', m.pollingRate.toFixed(2), `${m.budgetRate.toFixed(2)} (budget ${m.budgetPerSecond.toFixed(2)})`, ''],
      ['change → new file in all pods, p50 / p99', `${ms(m.polledP50)} / ${ms(m.polledP99)}`, `${ms(m.notifiedP50)} / ${ms(m.notifiedP99)} (notifications)`, `${p5099(aws.arrived)} (notifications)`],
      ['of which: the queue (the change made → the controller handled the SQS message)', '', '', ms(aws.received)],
      ['of which: the controller\'s fan-out (change seen → the pod\'s patch sent), p50 / p99', '', p5099(fanOut), p5099(aws.fanOut)],
      ['of which: the bench\'s stand-in for the kubelet (patch → channel file written), p50 / p99', '', p5099(projection), p5099(aws.projection)],
      ['of which: the agent (channel file → new file), p50 / p99', '', p5099(agentPart), p5099(aws.agentPart)],
      ['apiserver writes per change', '0', `${changeWrites} (one pod patch per pod mounting the key; ${setupWrites} to set the floors)`, String(aws.writes)],
      ['agents\' total RSS', mib(rss), '', mib(aws.rssBytes)],
    ])}

The model (bench/fleet/model.ts; docs/fleet.md, "Cost") against the measured points, and extrapolated:

${markdownTable(['pods', 'reads/s polling', 'reads/s with budget', 'change p99 polling', 'change p99 notifications', 'reads/month polling', 'cost/month polling (AWS SM)'], modelRows(m))}
`;
    process.stdout.write(`\n${body}\n`);
    if (!opts['no-write']) writeSection(join(ROOT, 'BENCHMARKS.md'), 'Fleet', body);
  }
} finally {
  await cleanup();
}

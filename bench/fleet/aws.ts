// The fleet bench's AWS path (docs/fleet.md, "Notifications"): N agents read an AWS Secrets
// Manager store on moto; a change is made there (PutSecretValue) and the event AWS would put
// on the bus is sent with EventBridge PutEvents (moto emits no CloudTrail record), so it
// reaches the operator's SQS queue through the rule. The controller's real queue reader
// (src/controller/fleet/aws-queue.ts) long-polls the queue, its feed gives the Fleet the
// entry's new version, the Fleet's patches land in the agents' channel files as in the
// Kubernetes path (run.ts), and the agents fetch from moto with their own credentials.
// Measured: the change → the new file in all N pods, and where the time goes.
import pino from 'pino';
import type { V1Pod } from '@kubernetes/client-node';
import { CreateSecretCommand, PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { AgentConfig } from '../../src/agent-config/types.js';
import type { AnySecretStore, ExternalSecret } from '../../src/api/types.js';
import { AwsChangeQueue, AwsFeed } from '../../src/controller/fleet/aws-queue.js';
import { Fleet } from '../../src/controller/fleet/fleet.js';
import { CHANGE_NOTIFICATIONS_ANNOTATION } from '../../src/controller/fleet/reads.js';
import { startMoto, useMotoEndpoint } from '../../test/support/platform/backends/moto.js';
import { changeQueue, cloudTrailEntry, motoEvents } from '../../test/support/platform/backends/moto-events.js';
import { arrival, CHANNEL, fileOf, OUT_DIR, project, quantile, rssOf, startAgent, type Agent } from './agents.js';

const CRED_DIR = '/var/run/secrets/esi/credentials/aws';
/** Polling must not deliver the change: only the notification does. */
const REFRESH_S = 3600;

export interface AwsResult {
  motoVersion: string;
  /** Ms from the change to the new file, sorted. */
  arrived: number[];
  /** The change made → the controller handled the queue's message (ms). */
  received: number;
  fanOut: number[];
  projection: number[];
  agentPart: number[];
  writes: number;
  rssBytes: number;
}

const remoteKeys = (i: number, groups: number) => ({ shared: 'fleet/shared', group: `fleet/group-${i % groups}` });

function agentConfig(i: number, region: string, groups: number): AgentConfig {
  const store = 'SecretStore/fleet/aws';
  return {
    version: 1, mode: 'native-sidecar', pod: { namespace: 'fleet', name: `pod-${i}`, serviceAccountName: 'default' },
    outputDir: OUT_DIR, fileMode: 0o440, refreshSeconds: REFRESH_S, port: 0, channelDir: CHANNEL,
    stores: { [store]: { kind: 'SecretStore', name: 'aws', credentialsDir: CRED_DIR, provider: { aws: { service: 'SecretsManager', region, auth: { secretRef: {
      accessKeyIDSecretRef: { name: 'aws-creds', key: 'access-key-id' },
      secretAccessKeySecretRef: { name: 'aws-creds', key: 'secret-access-key' },
    } } } } } },
    secrets: [{ name: 'app', store, dataFrom: [], data: Object.entries(remoteKeys(i, groups)).map(([secretKey, key]) => ({ secretKey, remoteRef: { key } })) }],
    templates: [],
  };
}

async function until(what: string, cond: () => Promise<boolean> | boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function measureAws(o: { agents: number; groups: number; patchQps: number; dir: string; log(msg: string): void }): Promise<AwsResult> {
  const teardowns: (() => unknown)[] = [];
  const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
  const agents: Agent[] = [];
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  try {
    const moto = await startMoto(t);
    useMotoEndpoint(t, moto); // the queue reader in this process finds moto as an operator's endpoint setting would
    const setup = { accessKeyId: 'bench', secretAccessKey: 'bench' };
    const sm = new SecretsManagerClient({ region: moto.region, endpoint: moto.endpoint, credentials: setup });
    t.teardown(() => sm.destroy());
    await sm.send(new CreateSecretCommand({ Name: 'fleet/shared', SecretString: 'v1' }));
    for (let g = 0; g < o.groups; g++) await sm.send(new CreateSecretCommand({ Name: `fleet/group-${g}`, SecretString: `g${g}-v1` }));
    const queue = await changeQueue(moto);
    const events = motoEvents(moto);

    o.log(`AWS path: starting ${o.agents} agents reading Secrets Manager on moto ${moto.version}`);
    const files = { [`${CRED_DIR}/aws-creds/access-key-id`]: setup.accessKeyId, [`${CRED_DIR}/aws-creds/secret-access-key`]: setup.secretAccessKey };
    for (let i = 0; i < o.agents; i++) agents.push(await startAgent(o.dir, i, agentConfig(i, moto.region, o.groups), { env: { AWS_ENDPOINT_URL: moto.endpoint }, files }));
    t.teardown(() => { for (const a of agents) a.proc.kill('SIGTERM'); });
    await until('every first render from moto', async () => (await Promise.all(agents.map((a) => fileOf(a, 'shared')))).every((v) => v === 'v1'), 600_000);
    const rssBytes = rssOf(agents);
    o.log(`AWS path: all rendered; RSS ${(rssBytes / 2 ** 20).toFixed(0)} MiB`);

    let writes = 0;
    const patchedAt = new Map<number, number>();
    const projectedAt = new Map<number, number>();
    let receivedAt = 0;
    const store = {
      apiVersion: 'external-secrets.io/v1', kind: 'SecretStore',
      metadata: { name: 'aws', namespace: 'fleet', annotations: { [CHANGE_NOTIFICATIONS_ANNOTATION]: 'true' } },
      spec: { provider: { aws: { service: 'SecretsManager', region: moto.region } } },
    } as unknown as AnySecretStore;
    const es = (i: number) => ({ metadata: { name: 'app', namespace: 'fleet' }, spec: { secretStoreRef: { name: 'aws' },
      data: Object.entries(remoteKeys(i, o.groups)).map(([secretKey, key]) => ({ secretKey, remoteRef: { key } })) } }) as unknown as ExternalSecret;
    const feed = new AwsFeed();
    const logger = pino({ level: 'warn' });
    const fleet = new Fleet({
      logger, externalSecret: (_ns, name) => es(Number(name.slice('app-'.length))), store: () => store, reconcilerRate: () => 0,
      sourceVersion: (s) => (s.kind === 'aws' ? feed.version(s.scope, s.name) : undefined),
      patchPod: async (_ns, name, ann) => {
        writes++;
        const a = agents[Number(name.slice('pod-'.length))]!;
        const gen = ann['esi.dev/change-generation'];
        if (!gen) return;
        patchedAt.set(a.index, Date.now());
        await project(a, 'change-generation', gen);
        projectedAt.set(a.index, Date.now());
      },
      patchQps: o.patchQps, debounceMs: 50,
    });
    t.teardown(() => fleet.stop());
    const reader = new AwsChangeQueue({
      url: queue.url, region: moto.region, feed, logger, credentials: () => Promise.resolve(setup),
      changed: (at) => {
        receivedAt = at;
        fleet.changed(at);
      },
      counted: () => undefined,
    });
    reader.start();
    t.teardown(() => reader.stop());
    const pod = (i: number): V1Pod => ({ metadata: { namespace: 'fleet', name: `pod-${i}`, annotations: {
      'esi.dev/injected': 'native-sidecar', 'esi.dev/secrets': `app-${i}`, 'esi.dev/refresh-interval': `${REFRESH_S}s` } } });
    for (let i = 0; i < o.agents; i++) fleet.observePod(pod(i), 'add');

    // The first event an entry gets gives its pods their first generation (until then they
    // carry none): a notice of an unchanged value first, so the change measured is a pod's
    // second generation, as in a running fleet.
    await events.put(cloudTrailEntry(moto.region, 'PutSecretValue', { secretId: 'fleet/shared' }));
    await until('the first generations written', () => projectedAt.size >= o.agents, 120_000);
    // Their fetches (of unchanged values) are done once moto has been quiet for a while.
    await new Promise((r) => setTimeout(r, 10_000));

    writes = 0;
    patchedAt.clear();
    projectedAt.clear();
    const t0 = Date.now();
    await sm.send(new PutSecretValueCommand({ SecretId: 'fleet/shared', SecretString: 'v2' }));
    await events.put(cloudTrailEntry(moto.region, 'PutSecretValue', { secretId: 'fleet/shared' }));
    const at = new Map<number, number>();
    const arrived = await arrival(agents, 'shared', 'v2', t0, 120_000, at);
    const sorted = (xs: Iterable<number>) => [...xs].sort((a, b) => a - b);
    const result: AwsResult = {
      motoVersion: moto.version, arrived, received: receivedAt - t0, writes, rssBytes,
      fanOut: sorted([...patchedAt.values()].map((p) => p - receivedAt)),
      projection: sorted([...projectedAt].map(([i, p]) => p - (patchedAt.get(i) ?? p))),
      agentPart: sorted([...at].map(([i, ms]) => t0 + ms - (projectedAt.get(i) ?? t0))),
    };
    o.log(`AWS path: change by notification p50 ${quantile(arrived, 0.5)} ms, p99 ${quantile(arrived, 0.99)} ms, ${writes} pod writes; queue ${result.received} ms, fan-out p99 ${quantile(result.fanOut, 0.99)} ms, agent p50 ${quantile(result.agentPart, 0.5)} / p99 ${quantile(result.agentPart, 0.99)} ms`);
    return result;
  } finally {
    for (const fn of teardowns.reverse()) await fn();
  }
}

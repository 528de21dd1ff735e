// esi.dev/env through the real apiserver: the pod as stored has one fileKeyRef per variable
// in the app container, the env volume mounted into the agent only, and no value anywhere;
// a refusal reads as the user sees it. Then what a cluster without the EnvFiles feature does
// with the pod ESI produces: a private apiserver with the gate off refuses it, and the
// message is the one docs/agent.md quotes.
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { AgentConfig } from '../../../src/agent-config/types.js';
import { startControlPlane } from '../../support/platform/control-plane-process.js';
import { until } from '../../support/platform/until.js';
import { CANARY, labelledPod, setupWebhook } from '../../support/fixtures/webhook.js';

const fx = await setupWebhook(t);
const core = fx.kc.makeApiClient(CoreV1Api);
let stored: V1Pod;

t.test('the stored pod: fileKeyRef entries in the app, the env volume in the agent only', async (t) => {
  await fx.createPod(labelledPod('env', { 'esi.dev/env': 'db:DB_PASSWORD=password' }));
  stored = await core.readNamespacedPod({ namespace: fx.ns, name: 'env' });
  const app = stored.spec!.containers.find((c) => c.name === 'app')!;
  t.same(app.env, [{ name: 'DB_PASSWORD', valueFrom: { fileKeyRef: { volumeName: 'esi-env', path: 'esi.env', key: 'DB_PASSWORD', optional: false } } }],
    'the apiserver kept the fileKeyRef (EnvFiles is on in 1.35)');
  t.notOk(app.volumeMounts?.some((m) => m.name === 'esi-env'), 'the app does not mount the env volume');
  const agent = stored.spec!.initContainers!.find((c) => c.name === 'esi-agent')!;
  t.same(agent.volumeMounts!.find((m) => m.name === 'esi-env'), { name: 'esi-env', mountPath: '/var/run/esi/env' }, 'the agent does');
  t.same(stored.spec!.volumes!.find((v) => v.name === 'esi-env')!.emptyDir, { medium: 'Memory', sizeLimit: '4Mi' });
  const config = JSON.parse(agent.env!.find((e) => e.name === 'ESI_AGENT_CONFIG')!.value!) as AgentConfig;
  t.same(config.env, { dir: '/var/run/esi/env', file: 'esi.env', vars: [{ name: 'DB_PASSWORD', secret: 'db', key: 'password' }] });
  t.notOk(JSON.stringify(stored).includes(CANARY), 'no value in the stored pod');
});

/** The message of a refused create, as `kubectl` prints it. */
async function refusal(create: Promise<unknown>): Promise<string> {
  const err = await create.then(() => undefined, (e: { body?: string }) => e);
  return (JSON.parse(err?.body ?? '{}') as { message?: string }).message ?? '';
}

t.test('a refusal through the API names the annotation', async (t) => {
  t.match(await refusal(fx.createPod(labelledPod('env-sidecar', { 'esi.dev/env': 'db:DB_PASSWORD=password', 'esi.dev/mode': 'sidecar' }))),
    /denied the request: ESI cannot inject secrets into pod "env-sidecar": esi\.dev\/env: needs esi\.dev\/mode native-sidecar or init-only/);
  t.match(await refusal(fx.createPod(labelledPod('env-dash', { 'esi.dev/env': 'db:db-password' }))),
    /esi\.dev\/env: "db-password" must be an environment variable name/);
});

t.test('an apiserver without EnvFiles refuses the pod ESI produces, with the message the docs quote', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'esi-cp-noenvfiles-'));
  const cp = await startControlPlane(dir, { apiserverArgs: ['--feature-gates=EnvFiles=false'] });
  t.teardown(async () => {
    await cp.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  const { metadata, spec } = stored;
  const pod: V1Pod = { metadata: { name: metadata!.name, annotations: metadata!.annotations, labels: metadata!.labels }, spec: { ...spec!, nodeName: undefined } };
  const api = kc.makeApiClient(CoreV1Api);
  // No controller-manager on this plane: the ServiceAccount admission plugin needs it.
  await until('the default namespace', () => api.createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name: 'default' } } }).then(() => true, () => undefined), 30_000);
  const message = await refusal(api.createNamespacedPod({ namespace: 'default', body: pod }));
  t.match(message, /spec\.containers\[0\]\.env\[0\]\.valueFrom: Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`/,
    'the gate off drops fileKeyRef, and validation refuses the empty valueFrom');
});

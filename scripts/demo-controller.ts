// The reconciler part of `npm run demo`: `esi controller` syncs an ExternalSecret into a
// Kubernetes Secret; `kubectl get es` printer columns, then the Secret's keys with their
// values masked (a demo prints no secret value either).
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { formatTable, getTable } from '../src/kube/table.js';
import { startController } from '../test/support/fixtures/controller.js';
import { runPushStep } from './demo-push.js';

const GROUP = 'external-secrets.io';

export async function runControllerStep(opts: { kc: KubeConfig; kubeconfigPath: string; step: (s: string) => void }): Promise<void> {
  const { kc, kubeconfigPath, step } = opts;
  const custom = kc.makeApiClient(CustomObjectsApi);
  const create = (plural: string, body: object) => custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: 'demo', plural, body: { apiVersion: `${GROUP}/v1`, ...body } });
  step('Starting `esi controller` (class "demo": it serves only stores with spec.controller: demo)');
  const ctl = await startController(kubeconfigPath, ['--controller-class', 'demo', '--claim-unclassed=false', '--namespace', 'esi-system']);
  try {
    await create('secretstores', { kind: 'SecretStore', metadata: { name: 'fake-synced' }, spec: { controller: 'demo', provider: { fake: { data: [
      { key: 'db/config', value: '{"host":"postgres.demo.svc","username":"orders","password":"correct-horse-battery-staple"}' },
    ] } } } });
    await create('externalsecrets', { kind: 'ExternalSecret', metadata: { name: 'synced-config', annotations: { 'esi.dev/template-engine': 'handlebars' } }, spec: {
      secretStoreRef: { name: 'fake-synced' }, refreshInterval: '1h',
      target: { name: 'synced-config', template: { type: 'Opaque', metadata: { labels: { app: 'orders' } }, mergePolicy: 'Merge',
        data: { 'DATABASE_URL': 'postgres://{{username}}:{{password}}@{{host}}:5432/orders' } } },
      dataFrom: [{ extract: { key: 'db/config' } }],
    } });
    const core = kc.makeApiClient(CoreV1Api);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const es = (await custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: 'demo', plural: 'externalsecrets', name: 'synced-config' })) as { status?: { conditions?: { type: string; status: string }[] } };
      if (es.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`ExternalSecret demo/synced-config not Ready:\n${ctl.output().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    step('kubectl get externalsecrets -n demo   (synced-config is served by the controller; the others by the webhook)');
    console.log(formatTable(await getTable(kc, '/apis/external-secrets.io/v1/namespaces/demo/externalsecrets')));
    step('kubectl get secret synced-config -n demo   (values masked)');
    const s = await core.readNamespacedSecret({ namespace: 'demo', name: 'synced-config' });
    console.log(`type: ${s.type}   labels: ${Object.entries(s.metadata?.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(', ')}`);
    console.log(`owner: ${s.metadata?.ownerReferences?.map((o) => `${o.kind}/${o.name}`).join(', ')}`);
    for (const [k, v] of Object.entries(s.data ?? {})) console.log(`  ${k.padEnd(16)} ${'*'.repeat(8)} (${Buffer.from(v, 'base64').length} bytes)`);
    await runPushStep({ kc, step, store: 'fake-synced', logs: ctl.output });
  } finally {
    await ctl.stop();
  }
}

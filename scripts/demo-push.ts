// The PushSecret part of `npm run demo` (runs while the demo's `esi controller` is up): a
// Secret made in the cluster is pushed to a store, an ExternalSecret reads it back into a
// new Secret (the round trip, compared without printing values), and a PushSecret that
// would push an ExternalSecret's Secret back into its own store is refused.
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { formatTable, getTable } from '../src/kube/table.js';

const GROUP = 'external-secrets.io';

type Ready = { status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] } };

export async function runPushStep(opts: { kc: KubeConfig; step: (s: string) => void; store: string; logs: () => string }): Promise<void> {
  const { kc, step, store } = opts;
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const create = (version: string, plural: string, body: object) =>
    custom.createNamespacedCustomObject({ group: GROUP, version, namespace: 'demo', plural, body: { apiVersion: `${GROUP}/${version}`, ...body } });
  const until = async (version: string, plural: string, name: string, status: string): Promise<Ready> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const o = (await custom.getNamespacedCustomObject({ group: GROUP, version, namespace: 'demo', plural, name })) as Ready;
      if (o.status?.conditions?.some((c) => c.type === 'Ready' && c.status === status)) return o;
      if (Date.now() > deadline) throw new Error(`${plural} demo/${name} not Ready=${status}:\n${opts.logs().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  await core.createNamespacedSecret({ namespace: 'demo', body: { metadata: { name: 'generated-api-key' }, stringData: { 'api-key': `demo-${Date.now().toString(36)}-generated` } } });
  await create('v1alpha1', 'pushsecrets', { kind: 'PushSecret', metadata: { name: 'publish-api-key' }, spec: {
    secretStoreRefs: [{ kind: 'SecretStore', name: store }], selector: { secret: { name: 'generated-api-key' } }, refreshInterval: '1m',
    deletionPolicy: 'Delete', data: [{ match: { secretKey: 'api-key', remoteRef: { remoteKey: 'published/api-key' } } }],
  } });
  await until('v1alpha1', 'pushsecrets', 'publish-api-key', 'True');
  step(`kubectl get pushsecrets -n demo   (Secret generated-api-key pushed to SecretStore ${store})`);
  console.log(formatTable(await getTable(kc, '/apis/external-secrets.io/v1alpha1/namespaces/demo/pushsecrets')));
  await create('v1', 'externalsecrets', { kind: 'ExternalSecret', metadata: { name: 'api-key-roundtrip' }, spec: {
    secretStoreRef: { name: store }, refreshInterval: '1h', data: [{ secretKey: 'api-key', remoteRef: { key: 'published/api-key' } }],
  } });
  await until('v1', 'externalsecrets', 'api-key-roundtrip', 'True');
  const [a, b] = await Promise.all(['generated-api-key', 'api-key-roundtrip'].map((name) => core.readNamespacedSecret({ namespace: 'demo', name })));
  step('Round trip: Secret generated-api-key → PushSecret → store → ExternalSecret api-key-roundtrip → Secret');
  console.log(`  api-key ${'*'.repeat(8)} (${Buffer.from(b!.data!['api-key']!, 'base64').length} bytes)   equal to the source: ${a!.data!['api-key'] === b!.data!['api-key'] ? 'yes' : 'NO'}`);
  await create('v1alpha1', 'pushsecrets', { kind: 'PushSecret', metadata: { name: 'loop' }, spec: {
    secretStoreRefs: [{ kind: 'SecretStore', name: store }], selector: { secret: { name: 'api-key-roundtrip' } },
    data: [{ match: { secretKey: 'api-key', remoteRef: { remoteKey: 'published/again' } } }],
  } });
  const loop = await until('v1alpha1', 'pushsecrets', 'loop', 'False');
  step('A PushSecret of an ExternalSecret-made Secret back into its own store is refused');
  console.log(`  Ready=False: ${loop.status?.conditions?.find((c) => c.type === 'Ready')?.message}`);
}

// PushSecret into the HTTP stores that write as ESO's do (Akeyless, Infisical), in
// `esi controller` on a real apiserver, read back from each stand-in's own store (what the
// user would see in the vendor's console): ESO's documented Akeyless PushSecret (the whole
// Secret as one JSON item, tagged as ESO tags it, deletionPolicy Delete removing it), an
// Infisical PushSecret (a key as a secret, another as a property path in a JSON secret in a
// folder, both removed by deletionPolicy Delete while a secret it did not write stays), and
// the shared scenario of push-matrix.ts on both. The stores are on 127.0.0.1, so the
// controller runs with --allow-private-store-addresses (test/e2e/controller/http-stores.test.ts
// shows the refusal without it). No canary in status, Events, logs or metrics.
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { startAkeylessStandIn, type AkeylessItem } from '../../support/standins/akeyless.js';
import { startInfisicalStandIn, type InfisicalProject } from '../../support/standins/infisical.js';
import { controllerEnv, create, startController, until } from '../../support/fixtures/controller.js';
import { createPush, deletePush, getPush, pushReady, putSecret } from '../../support/fixtures/push.js';
import { pushMatrix } from '../../support/cases/push-matrix.js';

const CANARY = 'pushhttp-canary-5e0b93';
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'push-http', t);

const AK_KEY = `${CANARY}-ak-access-key`;
const akItems: Record<string, AkeylessItem> = {};
const ak = await startAkeylessStandIn(t, { accessKey: { accessId: 'p-abc123', accessKey: AK_KEY } }, akItems);
await putSecret(env, ns, 'akeylss-secret-creds', { accessId: 'p-abc123', accessType: 'api_key', accessTypeParam: AK_KEY });
const akRef = (key: string) => ({ name: 'akeylss-secret-creds', key });
const akStore = {
  kind: 'SecretStore', metadata: { name: 'akeyless-secret-store' },
  spec: { controller: env.cls, provider: { akeyless: { akeylessGWApiURL: ak.url, authSecretRef: { secretRef: { accessID: akRef('accessId'), accessType: akRef('accessType'), accessTypeParam: akRef('accessTypeParam') } } } } },
};
await create(env, ns, 'secretstores', akStore);
/** An Akeyless item's latest value as JSON, as Akeyless's console shows it. */
const akRead = async (key: string) => {
  const item = akItems[key];
  return item?.type === 'STATIC_SECRET' ? (JSON.parse(item.versions.at(-1)!) as Record<string, unknown>) : undefined;
};

const INF_SECRET = `${CANARY}-inf-client-secret`;
const project: InfisicalProject = { slug: 'first-project-fujh', environment: 'dev', folders: { '/': { KEEP: 'not-pushed' }, '/app': {} } };
const inf = project.folders;
await putSecret(env, ns, 'universal-auth-credentials', { clientId: 'machine-id', clientSecret: INF_SECRET });
const infStandIn = await startInfisicalStandIn(t, { universal: { clientId: 'machine-id', clientSecret: INF_SECRET } }, project);
const infStore = {
  kind: 'SecretStore', metadata: { name: 'infisical' },
  spec: {
    controller: env.cls,
    provider: {
      infisical: {
        auth: { universalAuthCredentials: { clientId: { key: 'clientId', name: 'universal-auth-credentials' }, clientSecret: { key: 'clientSecret', name: 'universal-auth-credentials' } } },
        secretsScope: { projectSlug: 'first-project-fujh', environmentSlug: 'dev' },
        hostAPI: `${infStandIn.url}/api`,
      },
    },
  },
};
await create(env, ns, 'secretstores', infStore);
const infRead = async (key: string) => (Object.hasOwn(inf['/']!, key) ? (JSON.parse(inf['/']![key]!) as Record<string, unknown>) : undefined);

const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s', '--allow-private-store-addresses=true'], t);

t.test('Akeyless: ESO\'s documented PushSecret writes the whole Secret as one JSON item; Delete removes it', async (t) => {
  await putSecret(env, ns, 'k8s-created-secret', { username: 'orders', password: `${CANARY}-ak-pw` });
  await createPush(env, ns, 'push-secret', {
    refreshInterval: '1h', updatePolicy: 'Replace', deletionPolicy: 'Delete',
    secretStoreRefs: [{ name: 'akeyless-secret-store', kind: 'SecretStore' }],
    selector: { secret: { name: 'k8s-created-secret' } },
    data: [{ match: { remoteRef: { remoteKey: 'eso-created/my-secret' } } }],
  });
  await pushReady(env, ns, 'push-secret', 'True', 'Synced', { ms: 90_000 });
  t.same(await akRead('eso-created/my-secret'), { username: 'orders', password: `${CANARY}-ak-pw` }, 'the Secret as one JSON value');
  t.same(akItems['eso-created/my-secret']?.tags, ['k8s-external-secrets'], 'tagged as ESO tags the items it creates');
  await deletePush(env, ns, 'push-secret');
  await until('PushSecret gone', async () => !(await getPush(env, ns, 'push-secret')), 60_000);
  t.notOk(akItems['eso-created/my-secret'], 'deletionPolicy Delete removed the item');
});

t.test('Infisical: a key as a secret, another as a property path in a folder; Delete removes exactly those', async (t) => {
  await putSecret(env, ns, 'api', { token: `${CANARY}-inf-token`, url: 'https://api.example' });
  await createPush(env, ns, 'infisical-push', {
    deletionPolicy: 'Delete', secretStoreRefs: [{ name: 'infisical', kind: 'SecretStore' }], selector: { secret: { name: 'api' } },
    data: [
      { match: { secretKey: 'token', remoteRef: { remoteKey: 'API_TOKEN' } } },
      { match: { secretKey: 'url', remoteRef: { remoteKey: '/app/CONFIG', property: 'api.url' } } },
    ],
  });
  await pushReady(env, ns, 'infisical-push', 'True', 'Synced', { ms: 90_000 });
  t.equal(inf['/']!.API_TOKEN, `${CANARY}-inf-token`);
  t.same(JSON.parse(inf['/app']!.CONFIG!), { api: { url: 'https://api.example' } }, 'the property is a path into the JSON value');
  await putSecret(env, ns, 'api', { token: `${CANARY}-inf-token2`, url: 'https://api.example' });
  await until('the new token in Infisical', async () => inf['/']!.API_TOKEN === `${CANARY}-inf-token2`, 45_000);
  await deletePush(env, ns, 'infisical-push');
  await until('PushSecret gone', async () => !(await getPush(env, ns, 'infisical-push')), 60_000);
  t.notOk(Object.hasOwn(inf['/']!, 'API_TOKEN'), 'the pushed secret is deleted');
  t.notOk(Object.hasOwn(inf['/app']!, 'CONFIG'), 'its only property gone, the JSON secret is deleted');
  t.equal(inf['/']!.KEEP, 'not-pushed', 'a secret the PushSecret did not write stays');
});

t.test('Akeyless: the shared scenario', (t) => pushMatrix(t, env, ctl, ns, {
  label: 'Akeyless', store: akStore, read: akRead,
  seed: async (key, value) => void (akItems[key] = { type: 'STATIC_SECRET', versions: [JSON.stringify({ user: value })] }),
}));

t.test('Infisical: the shared scenario', (t) => pushMatrix(t, env, ctl, ns, {
  label: 'Infisical', store: infStore, read: infRead,
  seed: async (key, value) => void (inf['/']![key] = JSON.stringify({ user: value })),
}));

t.test('no canary in status, Events, logs or metrics', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1alpha1', namespace: ns, plural: 'pushsecrets' });
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  for (const [what, text] of [['status', JSON.stringify(list)], ['events', JSON.stringify(events)], ['logs', ctl.output()], ['metrics', await ctl.metrics()]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});

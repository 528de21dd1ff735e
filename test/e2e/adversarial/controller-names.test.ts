// Names are names (SECURITY.md "The controller"): a tenant with every right in its
// own namespace and none elsewhere writes names that climb out of it (`../../<ns>/secrets/x`)
// into every name field the reconciler turns into an API call. On the old code the
// controller resolved them with its own cluster-wide rights: it copied another namespace's
// Secret into the tenant's Secret (templateFrom), stripped keys from another namespace's
// managed Secret (target.name + deletionPolicy Merge), and pushed another namespace's Secret
// to the tenant's store (PushSecret selector.secret.name). Now each is InvalidSpec naming
// the field, nothing outside the tenant's namespace is read or written, and the victim's
// canary appears nowhere the tenant can look (status, Events) nor in logs and metrics.
import t from 'tap';
import { createNamespace, serviceAccountToken } from '../../support/kube.js';
import { createTenant } from '../../support/tenant.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getSecret, ready, startController, until, type Env } from '../../support/fixtures/controller.js';
import { createPush, pushReady, putSecret } from '../../support/fixtures/push.js';

const CANARY = 'CANARY-victim-5d1e77';
const env = await controllerEnv(t);
const victim = await createNamespace(env.kc, 'adv-victim', t);
const tenant = await createTenant(env.kc, 'adv-tenant', t);
const ns = tenant.namespace;
// The tenant's view of the world: the fixture's helpers, acting with the tenant's token.
const asTenant: Env = { ...env, kc: tenant.kc, core: tenant.core, custom: tenant.custom };
const climb = (kind: string, name: string) => `../../${victim}/${kind}/${name}`;

// The victim: a plain Secret and a ConfigMap, and a Secret the same controller manages.
await putSecret(env, victim, 'crown', { key: `${CANARY}-secret` });
await env.core.createNamespacedConfigMap({ namespace: victim, body: { metadata: { name: 'plans' }, data: { key: `${CANARY}-configmap` } } });
await create(env, victim, 'secretstores', fakeStore('fake', env.cls, [{ key: 'db', value: JSON.stringify({ a: `${CANARY}-a`, b: `${CANARY}-b` }) }]));
await create(env, victim, 'externalsecrets', externalSecret('managed', 'fake', { dataFrom: [{ extract: { key: 'db' } }] }));
await create(asTenant, ns, 'secretstores', fakeStore('fake', env.cls, [{ key: 'mine', value: 'tenant-value' }]));

const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'], t);
await ready(env, victim, 'managed', 'True', 'SecretSynced');
const managedBefore = await getSecret(env, victim, 'managed');

const message = async (name: string) =>
  (await ready(asTenant, ns, name, 'False', 'InvalidSpec')).status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';

t.test('the tenant really is confined: it may not read the victim\'s Secret itself', async (t) => {
  await t.rejects(tenant.core.readNamespacedSecret({ namespace: victim, name: 'crown' }), 'forbidden for the tenant');
});

t.test('templateFrom secret and configMap names that climb out are InvalidSpec; nothing is read', async (t) => {
  for (const [kind, plural, obj] of [['secret', 'secrets', 'crown'], ['configMap', 'configmaps', 'plans']] as const) {
    const name = `steal-${plural}`;
    await create(asTenant, ns, 'externalsecrets', externalSecret(name, 'fake', {
      data: [{ secretKey: 'mine', remoteRef: { key: 'mine' } }],
      target: { template: { templateFrom: [{ [kind]: { name: climb(plural, obj), items: [{ key: 'key' }] } }] } },
    }));
    t.match(await message(name), new RegExp(`spec\\.target\\.template\\.templateFrom\\[0\\]\\.${kind}\\.name must be an RFC 1123 subdomain`));
    t.notOk(await getSecret(env, ns, name), `no Secret ${name} was written`);
  }
});

t.test('a target.name that climbs out (deletionPolicy Merge) is InvalidSpec; the victim\'s managed Secret is untouched', async (t) => {
  await create(asTenant, ns, 'externalsecrets', externalSecret('strip', 'fake', {
    data: [{ secretKey: 'gone', remoteRef: { key: 'no-such-key' } }],
    target: { name: climb('secrets', 'managed'), creationPolicy: 'Merge', deletionPolicy: 'Merge' },
  }));
  t.match(await message('strip'), /spec\.target\.name must be an RFC 1123 subdomain/);
  // Give a wrong controller time to act before looking.
  await new Promise((r) => setTimeout(r, 3000));
  const after = await getSecret(env, victim, 'managed');
  t.same(decoded(after), decoded(managedBefore), 'the victim\'s data is as it was');
  t.same(after?.metadata?.annotations, managedBefore?.metadata?.annotations, 'ESI\'s bookkeeping on it is as it was');
  await ready(env, victim, 'managed', 'True', 'SecretSynced');
});

t.test('secretStoreRef.name that climbs out is InvalidSpec', async (t) => {
  await create(asTenant, ns, 'externalsecrets', externalSecret('store-climb', `../${victim}/fake`, { data: [{ secretKey: 'x', remoteRef: { key: 'db' } }] }));
  t.match(await message('store-climb'), /spec\.secretStoreRef\.name must be an RFC 1123 subdomain/);
});

t.test('a store credential reference that climbs out is refused naming the reference', async (t) => {
  await create(asTenant, ns, 'secretstores', {
    kind: 'SecretStore', metadata: { name: 'k8s-climb' },
    spec: { controller: env.cls, provider: { kubernetes: {
      remoteNamespace: ns, server: { url: env.cp.server, caBundle: Buffer.from(env.cp.caPem).toString('base64') },
      auth: { token: { bearerToken: { name: climb('secrets', 'crown'), key: 'key' } } },
    } } },
  });
  await create(asTenant, ns, 'externalsecrets', externalSecret('cred-climb', 'k8s-climb', { data: [{ secretKey: 'x', remoteRef: { key: 'anything' } }] }));
  const es = await until('cred-climb Ready=False', async () => {
    const cur = await asTenant.custom.getNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'cred-climb' }) as { status?: { conditions?: { type: string; status: string; message?: string }[] } };
    const c = cur.status?.conditions?.find((x) => x.type === 'Ready');
    return c?.status === 'False' ? c : undefined;
  });
  t.match(es.message, /(bearerToken|credential reference).*must be an RFC 1123 subdomain|not a valid Secret name/);
});

t.test('PushSecret selector.secret.name that climbs out is refused; nothing reaches the tenant\'s store', async (t) => {
  const token = await serviceAccountToken(env.kc, ns, 'tenant');
  await putSecret(asTenant, ns, 'own-token', { token });
  await create(asTenant, ns, 'secretstores', {
    kind: 'SecretStore', metadata: { name: 'sink' },
    spec: { controller: env.cls, provider: { kubernetes: {
      remoteNamespace: ns, server: { url: env.cp.server, caBundle: Buffer.from(env.cp.caPem).toString('base64') },
      auth: { token: { bearerToken: { name: 'own-token', key: 'token' } } },
    } } },
  });
  await createPush(asTenant, ns, 'exfiltrate', {
    secretStoreRefs: [{ name: 'sink', kind: 'SecretStore' }],
    selector: { secret: { name: climb('secrets', 'crown') } },
    data: [{ match: { secretKey: 'key', remoteRef: { remoteKey: 'stolen' } } }],
  });
  await pushReady(asTenant, ns, 'exfiltrate', 'False', undefined, { message: /spec\.selector\.secret\.name must be an RFC 1123 subdomain/ });
  t.notOk(await getSecret(env, ns, 'stolen'), 'no Secret "stolen" in the tenant\'s namespace');
});

t.test('the victim\'s canary is nowhere the tenant looks, nor in logs or metrics', async (t) => {
  const list = await tenant.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'externalsecrets' });
  const push = await tenant.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1alpha1', namespace: ns, plural: 'pushsecrets' });
  const secrets = await tenant.core.listNamespacedSecret({ namespace: ns });
  const events = await tenant.core.listNamespacedEvent({ namespace: ns });
  const texts: [string, string][] = [
    ['ExternalSecret status', JSON.stringify(list)], ['PushSecret status', JSON.stringify(push)], ['Events', JSON.stringify(events)],
    ['controller logs', ctl.output()], ['metrics', await ctl.metrics()],
  ];
  // Secret data is base64: look for the canary decoded.
  texts.push(['the tenant\'s Secrets', JSON.stringify((secrets.items ?? []).map((s) => decoded(s)))]);
  for (const [what, text] of texts) t.notOk(text.includes(CANARY), `no canary in ${what}`);
});

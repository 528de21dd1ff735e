// target.template on the real control plane through `esi controller`, read back through the
// API: label and annotation values rendered as Go templates (handlebars on the opt-in),
// type, mergePolicy, templateFrom from a ConfigMap and a Secret of the ExternalSecret's own
// namespace (Values, KeysAndValues, targets Data/Labels/Annotations), a changed ConfigMap
// reaching the Secret at the next refresh, and the refusals: a source that is missing or
// only exists in another namespace, a credential-minting type, an invalid rendered label.
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getSecret, patchSpec, ready, startController, until } from '../../support/fixtures/controller.js';
import { putSecret } from '../../support/fixtures/push.js';

const CANARY = 'ctl-tpl-canary-70be13';
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ctl-tpl', t);
const elsewhere = await createNamespace(env.kc, 'ctl-tpl-other', t);
await create(env, ns, 'secretstores', fakeStore('fake', env.cls, [
  { key: 'db', value: JSON.stringify({ username: 'orders', password: `${CANARY}-pw` }) },
]));
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'], t);

const putConfigMap = async (namespace: string, name: string, data: Record<string, string>) => {
  const body = { metadata: { name, namespace }, data };
  await env.core.createNamespacedConfigMap({ namespace, body }).catch(() => env.core.replaceNamespacedConfigMap({ namespace, name, body }));
};
const message = async (name: string, status: 'True' | 'False', reason?: string) =>
  (await ready(env, ns, name, status, reason)).status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';

t.test('metadata values are Go templates; type and ESI labels set; mergePolicy Merge keeps fetched keys', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('meta', 'fake', {
    target: { template: {
      type: 'kubernetes.io/basic-auth', mergePolicy: 'Merge',
      metadata: { labels: { team: '{{ .username }}', tier: 'db' }, annotations: { 'example.com/owner': 'team-{{ .username | upper }}' } },
      data: { password: '{{ .password }}' },
    } },
    dataFrom: [{ extract: { key: 'db' } }],
  }));
  await ready(env, ns, 'meta', 'True', 'SecretSynced');
  const s = (await getSecret(env, ns, 'meta'))!;
  t.equal(s.type, 'kubernetes.io/basic-auth');
  t.same(decoded(s), { username: 'orders', password: `${CANARY}-pw` });
  t.match(s.metadata?.labels, { team: 'orders', tier: 'db', 'esi.dev/managed': 'true' });
  t.equal(s.metadata?.annotations?.['example.com/owner'], 'team-ORDERS');
});

t.test('no template: the ExternalSecret labels and annotations are copied; a label the template drops is removed', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('plain', 'fake', { dataFrom: [{ extract: { key: 'db' } }] },
    { labels: { app: 'orders' }, annotations: { 'example.com/contact': 'team-orders' } }));
  await ready(env, ns, 'plain', 'True', 'SecretSynced');
  const s = await getSecret(env, ns, 'plain');
  t.equal(s?.metadata?.labels?.app, 'orders');
  t.equal(s?.metadata?.annotations?.['example.com/contact'], 'team-orders');

  await patchSpec(env, ns, 'externalsecrets', 'meta', (o) => {
    (o.spec as { target: { template: { metadata: { labels: Record<string, string> } } } }).target.template.metadata.labels = { team: '{{ .username }}' };
  });
  await until('the dropped label removed', async () => {
    const cur = await getSecret(env, ns, 'meta');
    return cur?.metadata?.labels?.team === 'orders' && !('tier' in (cur.metadata.labels ?? {}));
  });
  t.pass('tier removed, team kept');
});

t.test('handlebars on the opt-in renders metadata too', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('meta-hb', 'fake', {
    target: { template: { metadata: { labels: { team: '{{username}}' } }, data: { user: '{{username}}' } } },
    dataFrom: [{ extract: { key: 'db' } }],
  }, { annotations: { 'esi.dev/template-engine': 'handlebars' } }));
  await ready(env, ns, 'meta-hb', 'True');
  const s = await getSecret(env, ns, 'meta-hb');
  t.equal(s?.metadata?.labels?.team, 'orders');
  t.same(decoded(s), { user: 'orders' }, 'mergePolicy Replace (default): only rendered keys');
});

t.test('templateFrom ConfigMap and Secret of the own namespace; a changed ConfigMap reaches the Secret at the next refresh', async (t) => {
  await putConfigMap(ns, 'tpl', { dsn: 'postgres://{{ .username }}:{{ .password }}@db/v1', 'extra.yaml': 'region: "eu-{{ .username }}"' });
  await putSecret(env, ns, 'tpl-meta', { owner: '{{ .username }}-team' });
  await create(env, ns, 'externalsecrets', externalSecret('from', 'fake', {
    refreshInterval: '3s',
    target: { template: { templateFrom: [
      { configMap: { name: 'tpl', items: [{ key: 'dsn' }, { key: 'extra.yaml', templateAs: 'KeysAndValues' }] } },
      { secret: { name: 'tpl-meta', items: [{ key: 'owner' }] }, target: 'Labels' },
      { literal: 'example.com/rendered-by: "{{ .username }}"', target: 'Annotations' },
    ] } },
    dataFrom: [{ extract: { key: 'db' } }],
  }));
  await ready(env, ns, 'from', 'True', 'SecretSynced');
  const s = await getSecret(env, ns, 'from');
  t.same(decoded(s), { dsn: `postgres://orders:${CANARY}-pw@db/v1`, region: 'eu-orders' });
  t.equal(s?.metadata?.labels?.owner, 'orders-team');
  t.equal(s?.metadata?.annotations?.['example.com/rendered-by'], 'orders');

  await putConfigMap(ns, 'tpl', { dsn: 'postgres://{{ .username }}:{{ .password }}@db/v2', 'extra.yaml': 'region: "us"' });
  await until('the changed ConfigMap in the Secret', async () => decoded(await getSecret(env, ns, 'from')).dsn?.endsWith('@db/v2'), 60_000);
  t.same(decoded(await getSecret(env, ns, 'from')), { dsn: `postgres://orders:${CANARY}-pw@db/v2`, region: 'us' });
});

t.test('a missing source, or one only in another namespace, is Ready=False naming the field; creating it heals', async (t) => {
  await putConfigMap(elsewhere, 'shared-tpl', { v: '{{ .username }}' });
  await create(env, ns, 'externalsecrets', externalSecret('cross', 'fake', {
    target: { template: { templateFrom: [{ configMap: { name: 'shared-tpl', items: [{ key: 'v' }] } }] } },
    dataFrom: [{ extract: { key: 'db' } }],
  }));
  t.match(await message('cross', 'False', 'TemplateError'), new RegExp(`ConfigMap "${ns}/shared-tpl" \\(spec\\.target\\.template\\.templateFrom\\[0\\]\\.configMap\\.name\\) not found`));
  t.notOk(await getSecret(env, ns, 'cross'), 'the ConfigMap of another namespace is never read');
  await putConfigMap(ns, 'shared-tpl', { v: 'own-{{ .username }}' });
  await ready(env, ns, 'cross', 'True', 'SecretSynced');
  t.same(decoded(await getSecret(env, ns, 'cross')), { v: 'own-orders' });
});

t.test('refusals: credential-minting type, invalid rendered label (no value in the message)', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('sa-token', 'fake', {
    target: { template: { type: 'kubernetes.io/service-account-token', metadata: { annotations: { 'kubernetes.io/service-account.name': 'default' } } } },
    dataFrom: [{ extract: { key: 'db' } }],
  }));
  t.match(await message('sa-token', 'False', 'InvalidSpec'), /spec\.target\.template\.type "kubernetes\.io\/service-account-token" is not allowed/);
  t.notOk(await getSecret(env, ns, 'sa-token'));
  await create(env, ns, 'externalsecrets', externalSecret('bad-label', 'fake', {
    target: { template: { metadata: { labels: { pw: '{{ .password }}!' } } } },
    dataFrom: [{ extract: { key: 'db' } }],
  }));
  t.match(await message('bad-label', 'False', 'TemplateError'), /metadata\.labels\.pw: the rendered value of label key "pw" is not a valid label value/);
  t.notOk(await getSecret(env, ns, 'bad-label'));
});

t.test('no canary in status, Events, logs or metrics', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'externalsecrets' });
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  for (const [what, text] of [['status', JSON.stringify(list)], ['events', JSON.stringify(events)], ['logs', ctl.output()], ['metrics', await ctl.metrics()]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});

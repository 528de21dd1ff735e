// The ESO-semantics harness: every scenario of ./eso-semantics.cases.ts — one
// ExternalSecret each, over one fake store — applied at once on the real apiserver to the real
// `esi controller`, as a tenant would, and each checked through the API as its user would: the
// Ready condition, then the Secret's data, type and labels (or that there is no Secret).
// Adding a documented behaviour is adding a row to the table.
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getSecret, GROUP, ready, startController, until } from '../../support/fixtures/controller.js';
import { INVALID_STORE, SCENARIOS, STORE_DATA } from '../../support/cases/eso-semantics.js';

const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ctl-esosem', t);
await create(env, ns, 'secretstores', fakeStore('fake', env.cls, STORE_DATA));
const invalid = fakeStore(INVALID_STORE.name, env.cls, INVALID_STORE.data);
invalid.spec.provider.fake = { ...invalid.spec.provider.fake, validationResult: INVALID_STORE.validationResult } as typeof invalid.spec.provider.fake;
await create(env, ns, 'secretstores', invalid);
await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'], t);

for (const s of SCENARIOS) await create(env, ns, 'externalsecrets', externalSecret(s.name, s.store ?? 'fake', s.spec));

t.test('a store whose validation fails (fake validationResult 2) is Ready=False, ValidationFailed', async (t) => {
  const store = await until('the store\'s Ready condition', async () => {
    const o = await env.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'secretstores', name: INVALID_STORE.name }) as { status?: { conditions?: { type: string; status: string; reason?: string }[] } };
    return o.status?.conditions?.find((c) => c.type === 'Ready');
  });
  t.match(store, { status: 'False', reason: 'ValidationFailed' });
});

for (const s of SCENARIOS) {
  t.test(`${s.name}: ${s.rule}`, async (t) => {
    const es = await ready(env, ns, s.name, s.ready.status, s.ready.reason);
    const cond = es.status?.conditions?.find((c) => c.type === 'Ready');
    if (s.ready.message) t.match(cond?.message, s.ready.message);
    const secret = await getSecret(env, ns, s.name);
    if (s.noSecret) {
      t.notOk(secret, 'no Secret');
      return;
    }
    t.ok(secret, 'the Secret exists');
    if (s.data) t.same(decoded(secret), s.data, 'data');
    for (const [k, v] of Object.entries(s.bytes ?? {})) t.same(Buffer.from(secret?.data?.[k] ?? '', 'base64'), v, `bytes of ${k}`);
    if (s.type) t.equal(secret?.type, s.type, 'type');
    for (const [k, v] of Object.entries(s.labels ?? {})) t.equal(secret?.metadata?.labels?.[k], v, `label ${k}`);
  });
}

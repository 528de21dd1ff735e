// The two write paths' concurrency rules against the real apiserver: a Secret update built
// from a stale read is refused (and nothing is overwritten), and a replica publishing an
// older CA bundle never replaces a newer one in the webhook configuration.
import t, { type Test } from 'tap';
import { applyPlan, caBundle, type CertState } from '../../../certs/plan.js';
import { generateCa, parseCert, servingIdentity } from '../../../certs/pki.js';
import { CertSecretStore } from '../../../certs/secret-store.js';
import { WebhookCaPublisher, fingerprints } from '../../../certs/webhook-ca.js';
import { KubeRest } from '../../../src/kube/rest.js';
import { createNamespace } from '../../support/kube.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { createDummyWebhookConfig, publishedBundles } from '../../support/certs.js';

const cp = await useControlPlane(t);
const identity = servingIdentity('esi-webhook', 'ns');
const life = { caLifetimeMs: 3_600_000, certLifetimeMs: 600_000 };
const EMPTY: CertState = { previousCas: [], bundleVersion: 0, caRotatedAt: 0 };
/** The client the webhook's certificate source gives both (certs/bootstrap.ts). */
function rest(t: Test): KubeRest {
  const r = new KubeRest(cp.kc);
  t.teardown(() => r.close());
  return r;
}
const fresh = () => applyPlan(EMPTY, { actions: ['new-ca', 'new-serving'], reasons: [] }, identity, Date.now(), life);

t.test('create has one winner; an update from a stale read is refused', async (t) => {
  const namespace = await createNamespace(cp.kc, 'certs-store', t);
  const store = new CertSecretStore(rest(t), namespace, 'tls');
  t.equal(await store.read(), undefined);
  const [a, b] = await Promise.all([fresh(), fresh()]);
  const results = await Promise.all([store.create(a), store.create(b)]);
  t.equal(results.filter(Boolean).length, 1, 'exactly one create succeeds');
  const read1 = (await store.read())!;
  const read2 = (await store.read())!;
  const winner = results.find(Boolean)!;
  t.equal(read1.state.ca?.certPem, winner.state.ca?.certPem, 'the stored CA is the winner\'s');

  const rotated = await applyPlan(read1.state, { actions: ['new-serving'], reasons: [] }, identity, Date.now(), life);
  t.ok(await store.update(read1, rotated), 'first update with the read resourceVersion succeeds');
  const other = await applyPlan(read2.state, { actions: ['new-serving'], reasons: [] }, identity, Date.now(), life);
  t.equal(await store.update(read2, other), undefined, 'second update from the same (now stale) read gets a conflict');
  const final = (await store.read())!;
  t.equal(parseCert(final.state.serving?.certPem)?.serial, parseCert(rotated.serving?.certPem)?.serial, 'the first writer\'s cert stays');
  t.equal(final.secret.type, 'kubernetes.io/tls');
});

t.test('an older bundle never replaces a newer one; a recreated Secret\'s does', async (t) => {
  const name = await createDummyWebhookConfig(cp.kc, t);
  const pub = new WebhookCaPublisher(rest(t), name);
  const old = await fresh();
  const v1: CertState = { ...old, bundleVersion: 1 };
  const newCa = await generateCa(Date.now(), life.caLifetimeMs);
  const v2: CertState = { ...old, ca: newCa, previousCas: [old.ca!.certPem], bundleVersion: 2 };

  t.equal((await pub.publish(caBundle(v2), 2)).outcome, 'updated');
  const stale = await pub.publish(caBundle(v1), 1);
  t.equal(stale.outcome, 'newer', 'a stale replica backs off');
  for (const b of await publishedBundles(cp.kc, name)) t.equal(b, caBundle(v2), 'the newer bundle stays');
  t.equal((await pub.publish(caBundle(v2), 2)).outcome, 'unchanged');

  // A Secret deleted and recreated: unrelated CA, lower version. It must still be published.
  const recreated = await fresh();
  const res = await pub.publish(caBundle(recreated), 1);
  t.equal(res.outcome, 'updated');
  t.same([...res.trusted], [...fingerprints(recreated.ca!.certPem)]);
});

// A managed Secret as the cache keeps it, without its values (src/controller/runtime/cached-secret.ts):
// the reconciler still tells an up-to-date Secret from one to write, and a write that changes
// its data (restart on change) from one that does not, by its data hash alone.
import type { V1Secret } from '@kubernetes/client-node';
import t from 'tap';
import type { ExternalSecret } from '../../../../src/api/types.js';
import { desiredSecret, planSecret } from '../../../../src/controller/externalsecret/secret.js';
import { dataChanged } from '../../../../src/controller/restart/match.js';
import { dataElided, handEdited, receiveSecret } from '../../../../src/controller/runtime/cached-secret.js';

const es = { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db', namespace: 'n', uid: 'u1' }, spec: {} } as ExternalSecret;
const want = (pw: string, es_ = es) => desiredSecret(es_, { kind: 'SecretStore', name: 's' }, { data: { pw: new TextEncoder().encode(pw) }, labels: {}, annotations: {} });
/** The Secret as written for `pw`, as the watch delivers it (a copy), then received by the cache. */
function cached(pw: string): V1Secret {
  const plan = planSecret(want(pw), es, undefined, () => false) as { body: V1Secret };
  const s = structuredClone(plan.body);
  receiveSecret(s);
  return s;
}

t.test('an up-to-date Secret cached without values needs no write; a changed value does', async (t) => {
  const cur = cached('canary-7f3a');
  t.ok(dataElided(cur));
  t.equal(cur.data, undefined, 'no value held');
  t.notOk(JSON.stringify(cur).includes(Buffer.from('canary-7f3a').toString('base64')), 'not even in another field');
  t.notOk(handEdited(cur), 'verified on receipt: not a hand edit');
  t.equal(planSecret(want('canary-7f3a'), es, cur, () => false).action, 'none');
  const next = planSecret(want('other'), es, cur, () => false);
  t.equal(next.action, 'replace');
  t.ok(dataChanged(cur, next), 'a new value is a data change');
});

t.test('a metadata-only or type-only rewrite of a value-less Secret is no data change', async (t) => {
  const cur = cached('x');
  const labelled = want('x', { ...es, metadata: { ...es.metadata, labels: { team: 'a' } } });
  const plan = planSecret(labelled, es, cur, () => false);
  t.equal(plan.action, 'replace', 'the label is written');
  t.notOk(dataChanged(cur, plan));
  const typed = planSecret({ ...want('x'), type: 'kubernetes.io/basic-auth' }, es, cur, () => false);
  t.equal(typed.action, 'recreate');
  t.notOk(dataChanged(cur, typed), 'the same data under another type');
});

t.test('a Secret edited by hand is not trusted, whatever it says', async (t) => {
  const plan = planSecret(want('x'), es, undefined, () => false) as { body: V1Secret };
  const edited = structuredClone(plan.body);
  edited.data = { pw: Buffer.from('tampered').toString('base64') };
  t.notOk(receiveSecret(edited), 'not as written');
  t.equal(edited.data, undefined, 'its data is not kept either');
  t.notOk(dataElided(edited));
  t.ok(handEdited(edited), 'queued for repair');
});

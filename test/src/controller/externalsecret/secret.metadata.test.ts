// The user metadata of a managed Secret (src/controller/externalsecret/secret.ts): the template's labels and
// annotations, or without a template the ExternalSecret's own (as ESO copies them, minus
// kubectl's last-applied record); keys a later spec no longer wants are removed, keys
// someone else set are kept, and an unchanged spec plans no write.
import type { V1Secret } from '@kubernetes/client-node';
import t from 'tap';
import type { ExternalSecret } from '../../../../src/api/types.js';
import { desiredSecret, planSecret } from '../../../../src/controller/externalsecret/secret.js';

const store = { kind: 'SecretStore', name: 's' };
const data = { pw: new TextEncoder().encode('x') };
const es = (meta: Partial<ExternalSecret['metadata']>, spec: ExternalSecret['spec'] = {}): ExternalSecret =>
  ({ apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db', namespace: 'n', uid: 'u1', ...meta }, spec });
const plan = (e: ExternalSecret, rendered: { labels: Record<string, string>; annotations: Record<string, string> }, cur?: V1Secret) =>
  planSecret(desiredSecret(e, store, { data, ...rendered }), e, cur, () => false);
const bodyOf = (p: ReturnType<typeof planSecret>) => (p as { body: V1Secret }).body;

t.test('without a template the ExternalSecret labels and annotations are copied', async (t) => {
  const e = es({ labels: { app: 'orders' }, annotations: { note: 'hi', 'kubectl.kubernetes.io/last-applied-configuration': '{}' } });
  const body = bodyOf(plan(e, { labels: {}, annotations: {} }));
  t.match(body.metadata?.labels, { app: 'orders', 'esi.dev/managed': 'true' });
  t.equal(body.metadata?.annotations?.note, 'hi');
  t.notOk(body.metadata?.annotations?.['kubectl.kubernetes.io/last-applied-configuration']);
  t.same(JSON.parse(body.metadata!.annotations!['esi.dev/metadata-keys']!), { labels: ['app'], annotations: ['note'] });
});

t.test('keys no longer wanted are removed; foreign keys kept; unchanged = no write', async (t) => {
  const e = es({}, { target: { template: { metadata: { labels: { a: '1', b: '2' } } } } });
  const first = bodyOf(plan(e, { labels: { a: '1', b: '2' }, annotations: { c: '3' } }));
  first.metadata!.labels!.foreign = 'kept';
  first.metadata!.annotations!['other.io/x'] = 'kept';
  t.equal(plan(e, { labels: { a: '1', b: '2' }, annotations: { c: '3' } }, first).action, 'none', 'same metadata: no write');
  const second = plan(e, { labels: { a: '1' }, annotations: {} }, first);
  t.equal(second.action, 'replace');
  const body = bodyOf(second);
  t.equal(body.metadata?.labels?.a, '1');
  t.notOk('b' in body.metadata!.labels!, 'dropped label removed');
  t.notOk('c' in body.metadata!.annotations!, 'dropped annotation removed');
  t.equal(body.metadata?.labels?.foreign, 'kept');
  t.equal(body.metadata?.annotations?.['other.io/x'], 'kept');
  const third = plan(e, { labels: {}, annotations: {} }, body);
  t.notOk('esi.dev/metadata-keys' in bodyOf(third).metadata!.annotations!, 'no user metadata left: no record');
  t.notOk('a' in bodyOf(third).metadata!.labels!);
  t.equal(plan(e, { labels: {}, annotations: {} }, bodyOf(third)).action, 'none');
});

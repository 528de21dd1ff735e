// The Secret an ExternalSecret writes, planned without a cluster (src/controller/externalsecret/secret.ts).
import type { V1Secret } from '@kubernetes/client-node';
import t from 'tap';
import type { ExternalSecret } from '../../../../src/api/types.js';
import { desiredSecret, planSecret } from '../../../../src/controller/externalsecret/secret.js';
import { editedByHand } from '../../../../src/controller/runtime/labels.js';

t.test('Secret plan: create, no-op, repair, conflicts, Merge', async (t) => {
  const es = { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db', namespace: 'n', uid: 'u1' }, spec: {} } as ExternalSecret;
  const d = desiredSecret(es, { kind: 'SecretStore', name: 's' }, { data: { pw: new TextEncoder().encode('x') }, labels: {}, annotations: {} });
  const create = planSecret(d, es, undefined, () => false);
  t.equal(create.action, 'create');
  const body = (create as { body: V1Secret }).body;
  t.equal(planSecret(d, es, body, () => false).action, 'none', 'identical: no write');
  t.notOk(editedByHand(body));
  const edited = { ...body, data: { pw: Buffer.from('tampered').toString('base64') } };
  t.ok(editedByHand(edited), 'hash mismatch = hand edit');
  t.equal(planSecret(d, es, edited, () => false).action, 'replace');
  const other = { ...body, metadata: { ...body.metadata, ownerReferences: [{ apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', name: 'x', uid: 'u2', controller: true }] } };
  t.match(planSecret(d, es, other, () => true), { action: 'refuse', reason: 'SecretConflict', message: /owned by ExternalSecret "x"/ });
  t.match(planSecret(d, es, { metadata: { name: 'db' }, data: {} }, () => false), { action: 'refuse', message: /not managed by ESI/ });
  // Adoption: the writer's ownerReference to this very ExternalSecret, or esi.dev/adopt naming it.
  const esoWritten = { metadata: { name: 'db', ownerReferences: [{ apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', name: 'db', uid: 'u1', controller: true }] }, data: {} };
  t.match(planSecret(d, es, esoWritten, () => true), { action: 'replace', adopted: /controller ownerReference is this ExternalSecret/ });
  t.match(planSecret(d, es, { metadata: { name: 'db', annotations: { 'esi.dev/adopt': 'db' } }, data: {} }, () => false), { action: 'replace', adopted: /esi\.dev\/adopt: db/ });
  t.match(planSecret(d, es, { metadata: { name: 'db', annotations: { 'esi.dev/adopt': 'other' } }, data: {} }, () => false), { action: 'refuse', reason: 'SecretConflict' });
  t.notOk((planSecret(d, es, edited, () => false) as { adopted?: string }).adopted, 'a managed Secret is not adopted');
  const merge = desiredSecret({ ...es, spec: { target: { creationPolicy: 'Merge' } } }, { kind: 'SecretStore', name: 's' }, { data: { pw: new TextEncoder().encode('x') }, labels: {}, annotations: {} });
  t.match(planSecret(merge, es, undefined, () => false), { action: 'refuse', reason: 'SecretMissing' });
  const merged = planSecret(merge, es, { metadata: { name: 'db' }, data: { own: 'eA==' } }, () => false) as { body: { data: Record<string, string> } };
  t.same(Object.keys(merged.body.data).sort(), ['own', 'pw'], 'Merge keeps the other keys');
});

t.test('Secret plan: Merge drops the keys it merged before and no longer has; template finalizers', async (t) => {
  const es = { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db', namespace: 'n', uid: 'u1' }, spec: { target: { creationPolicy: 'Merge' } } } as ExternalSecret;
  const enc = (s: string) => new TextEncoder().encode(s);
  const want = (data: Record<string, string>, spec: ExternalSecret['spec'] = es.spec) => desiredSecret({ ...es, spec }, { kind: 'SecretStore', name: 's' },
    { data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, enc(v)])), labels: {}, annotations: {} });
  const first = (planSecret(want({ a: '1', b: '2' }), es, { metadata: { name: 'db' }, data: { own: 'eA==' } }, () => false) as { body: V1Secret }).body;
  const second = planSecret(want({ b: '2' }), es, first, () => false) as { action: string; body: V1Secret };
  t.equal(second.action, 'replace', 'a merged key gone is a change');
  t.same(Object.keys(second.body.data!).sort(), ['b', 'own'], 'the key no longer merged is removed, the user\'s stays');
  t.equal(planSecret(want({ b: '2' }), es, second.body, () => false).action, 'none');

  const owner = { target: { template: { metadata: { finalizers: ['esi.test/a'] } } } };
  const withFin = (planSecret(want({ a: '1' }, owner), es, undefined, () => false) as { body: V1Secret }).body;
  t.same(withFin.metadata?.finalizers, ['esi.test/a']);
  const others = { ...withFin, metadata: { ...withFin.metadata, finalizers: ['esi.test/a', 'other/b'] } };
  t.equal(planSecret(want({ a: '1' }, owner), es, others, () => false).action, 'none', 'another actor\'s finalizer is no change');
  const dropped = planSecret(want({ a: '1' }, { target: {} }), es, others, () => false) as { action: string; body: V1Secret };
  t.equal(dropped.action, 'replace');
  t.same(dropped.body.metadata?.finalizers, ['other/b'], 'the dropped finalizer is removed, the other kept');
});

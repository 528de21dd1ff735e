// The PushSecret reconciler's pure parts, without a control plane: spec checks, remote key
// substitution, values (whole Secret, conversion, missing key), JSON-aware comparison, the
// loop check, ReadOnly stores, per-key serialization, and compare-before-write with the
// ownership rule against the fake provider's client.
import t from 'tap';
import type { AnySecretStore, PushSecret } from '../../../../src/api/types.js';
import { FakeClient } from '../../../../src/providers/fake/index.js';
import type { PushOptions, PushRemoteRef, SecretsClient } from '../../../../src/providers/types.js';
import { KeyedMutex, NotOwned, pushEntry, sameMetadata } from '../../../../src/controller/pushsecret/remote.js';
import { entryKey, forSource, pushSpec, selectorQuery } from '../../../../src/controller/pushsecret/spec.js';
import { loopProblems, storeProblems } from '../../../../src/controller/pushsecret/targets.js';
import { entryValue, MissingKey, reverseUnicode, sameValue } from '../../../../src/controller/pushsecret/values.js';

const enc = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

function ps(spec: Partial<PushSecret['spec']>, annotations?: Record<string, string>): PushSecret {
  return {
    apiVersion: 'external-secrets.io/v1alpha1', kind: 'PushSecret', metadata: { name: 'p', namespace: 'n', annotations },
    spec: { secretStoreRefs: [{ name: 's' }], selector: { secret: { name: 'src' } }, data: [{ match: { secretKey: 'k', remoteRef: { remoteKey: 'r' } } }], ...spec },
  };
}

const store = (kind: 'SecretStore' | 'ClusterSecretStore', name: string) => ({ kind, metadata: { name, namespace: 'n' }, spec: { provider: { fake: { data: [] } } } }) as unknown as AnySecretStore;

t.test('spec checks name the field', async (t) => {
  t.ok(pushSpec(ps({})).spec);
  t.equal(pushSpec(ps({})).spec?.intervalMs, 3_600_000, 'refreshInterval defaults to 1h');
  const bad = pushSpec(ps({ refreshInterval: 'soon', selector: { secret: {} }, secretStoreRefs: [], data: [], updatePolicy: 'Never' as never }));
  t.notOk(bad.spec);
  for (const re of [/spec.refreshInterval "soon"/, /spec.selector.secret needs name or selector/, /spec.secretStoreRefs is empty/, /spec.data and spec.dataTo are empty/, /spec.updatePolicy "Never"/]) {
    t.ok(bad.problems.some((p) => re.test(p)), String(re));
  }
  t.equal(pushSpec(ps({ template: { data: { x: '{{ .k }}' } } })).spec?.engine, 'go', 'Go templates by default, as ESO');
  t.match(pushSpec(ps({ template: { data: { x: '{{ .k | nosuchfunc }}' } } })).problems.join(), /nosuchfunc/);
  t.equal(pushSpec(ps({ template: { data: { x: '{{k}}' } } }, { 'esi.dev/template-engine': 'handlebars' })).spec?.engine, 'handlebars');
  t.match(pushSpec(ps({ selector: { generatorRef: { apiVersion: 'x', kind: 'Password', name: 'g' } } })).problems.join(), /spec\.selector\.generatorRef\.apiVersion must be generators\.external-secrets\.io\/v1alpha1/);
  t.match(pushSpec(ps({ selector: { generatorRef: { kind: 'Password', name: 'g' }, secret: { name: 's' } } })).problems.join(), /set secret or generatorRef, not both/);
  t.same(pushSpec(ps({ selector: { generatorRef: { apiVersion: 'generators.external-secrets.io/v1alpha1', kind: 'Password', name: 'g' } } })).problems, [], 'a generator is a source');
});

t.test('remote keys per source Secret; status entry keys; label selector query', async (t) => {
  const d = forSource({ match: { secretKey: 'url', remoteRef: { remoteKey: 'pub/{{ .Name }}', property: 'p-{{.Name}}' } } }, 'conn-a');
  t.same(d.match.remoteRef, { remoteKey: 'pub/conn-a', property: 'p-conn-a' });
  t.equal(entryKey(d), 'pub/conn-a/p-conn-a');
  t.equal(entryKey({ match: { remoteRef: { remoteKey: 'x' } } }), 'x');
  t.equal(selectorQuery({ matchLabels: { a: 'b' }, matchExpressions: [{ key: 'c', operator: 'In', values: ['1', '2'] }, { key: 'd', operator: 'DoesNotExist' }] }), 'a=b,c in (1,2),!d');
});

t.test('values: whole Secret as sorted JSON, ReverseUnicode, missing key', async (t) => {
  const values = { b: enc('2'), a: enc('1'), 'x_U002e_y': enc('3') };
  t.equal(text(entryValue({ match: { remoteRef: { remoteKey: 'r' } } }, values, 's', 0)), '{"a":"1","b":"2","x_U002e_y":"3"}');
  t.equal(text(entryValue({ match: { remoteRef: { remoteKey: 'r' } }, conversionStrategy: 'ReverseUnicode' }, values, 's', 0)), '{"a":"1","b":"2","x.y":"3"}');
  t.equal(text(entryValue({ match: { secretKey: 'x.y', remoteRef: { remoteKey: 'r' } }, conversionStrategy: 'ReverseUnicode' }, values, 's', 0)), '3');
  let err: unknown;
  try {
    entryValue({ match: { secretKey: 'nope', remoteRef: { remoteKey: 'r' } } }, values, 's', 2);
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof MissingKey);
  t.match((err as Error).message, /^spec.data\[2\].match.secretKey "nope" is not a key of Secret "s"$/);
  t.equal(reverseUnicode('a_U0024_b'), 'a$b');
  t.ok(sameValue(enc('{"b":1,"a":{"y":2,"x":1}}'), enc('{"a":{"x":1,"y":2},"b":1}')), 'JSON objects compare by content');
  t.notOk(sameValue(enc('{"a":1}'), enc('{"a":2}')));
  t.notOk(sameValue(enc('abc'), enc('abd')));
});

t.test('loop check: a Secret is not pushed back into the store it came from', async (t) => {
  const secret = { metadata: { name: 'from-es', labels: { 'esi.dev/store-kind': 'SecretStore', 'esi.dev/store': 'vault' }, annotations: { 'esi.dev/source-store': 'SecretStore/vault' } } };
  t.match(loopProblems(secret, [store('SecretStore', 'vault'), store('SecretStore', 'aws')]).join(), /pushing it back into the store it came from is refused/);
  t.same(loopProblems(secret, [store('SecretStore', 'aws'), store('ClusterSecretStore', 'vault')]), []);
  t.same(loopProblems({ metadata: { name: 'plain' } }, [store('SecretStore', 'vault')]), []);
});

t.test('a ReadOnly store refuses pushes', async (t) => {
  const ready = { ensure: async () => ({ version: '1', ready: true, reason: 'Valid', message: 'ok' }) };
  const problems = await storeProblems([store('SecretStore', 'ro')], ready, async () => ({ capabilities: { write: false } }));
  t.match(problems.join(), /SecretStore "n\/ro" is ReadOnly \(provider "fake" cannot write\)/);
  t.same(await storeProblems([store('SecretStore', 'rw')], ready, async () => ({ capabilities: { write: true } })), []);
});

t.test('KeyedMutex serializes per key, not across keys', async (t) => {
  const m = new KeyedMutex();
  const log: string[] = [];
  const step = (k: string, id: string, ms: number) => m.run(k, async () => {
    log.push(`${id}+`);
    await new Promise((r) => setTimeout(r, ms));
    log.push(`${id}-`);
  });
  await Promise.all([step('a', 'a1', 30), step('a', 'a2', 1), step('b', 'b1', 5)]);
  t.ok(log.indexOf('a1-') < log.indexOf('a2+'), 'same key: one after the other');
  t.ok(log.indexOf('b1+') < log.indexOf('a1-'), 'other key: concurrent');
  t.equal(m.size, 0, 'no leftover chains');
});

t.test('pushEntry: compare before write, IfNotExists, ownership without a provider mark', async (t) => {
  const client = new FakeClient('SecretStore/n/fake', [{ key: 'theirs', value: 'x' }]);
  const base = { client, provider: 'fake', updatePolicy: 'Replace' as const, recorded: false };
  t.equal(await pushEntry({ ...base, ref: { remoteKey: 'mine' }, value: enc('v1') }), 'written');
  t.equal(await pushEntry({ ...base, ref: { remoteKey: 'mine' }, value: enc('v1'), recorded: true }), 'equal');
  t.equal(await pushEntry({ ...base, ref: { remoteKey: 'mine' }, value: enc('v2'), recorded: true }), 'written');
  t.equal(text(await client.getSecret({ key: 'mine' })), 'v2');
  const refused = await pushEntry({ ...base, ref: { remoteKey: 'theirs' }, value: enc('y') }).catch((e: unknown) => e);
  t.ok(refused instanceof NotOwned, 'refused');
  t.match((refused as Error).message, /was not written by this PushSecret; the fake provider keeps no ownership mark/);
  t.equal(text(await client.getSecret({ key: 'theirs' })), 'x', 'foreign entry untouched');
  t.equal(await pushEntry({ ...base, ref: { remoteKey: 'theirs' }, value: enc('y'), updatePolicy: 'IfNotExists' }), 'exists');
  t.equal(await pushEntry({ ...base, ref: { remoteKey: 'theirs' }, value: enc('x') }), 'equal', 'equal foreign value: no write, no refusal');
});

t.test('pushEntry: changed metadata is pushed even for an equal value, with the metadata', async (t) => {
  const client = new FakeClient('SecretStore/n/fake', []);
  const seen: unknown[] = [];
  const push = client.pushSecret.bind(client);
  (client as SecretsClient).pushSecret = (v: Uint8Array, r: PushRemoteRef, o?: PushOptions) => (seen.push(o?.metadata), push(v, r));
  const base = { client, provider: 'fake', updatePolicy: 'Replace' as const, recorded: true, ref: { remoteKey: 'k' }, value: enc('v') };
  t.equal(await pushEntry(base), 'written');
  t.equal(await pushEntry({ ...base, metadata: { tags: { a: 'b' } }, metadataChanged: false }), 'equal', 'same metadata: no write');
  t.equal(await pushEntry({ ...base, metadata: { tags: { a: 'c' } }, metadataChanged: true }), 'written', 'changed metadata: written');
  t.same(seen, [undefined, { tags: { a: 'c' } }]);
  t.ok(sameMetadata({ spec: { a: 1, b: 2 } }, { spec: { b: 2, a: 1 } }), 'key order aside');
  t.notOk(sameMetadata(undefined, { spec: {} }));
});

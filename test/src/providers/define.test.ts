// The shared provider helpers on their own: the JSON path module (both meanings of
// `property`, prototype safety), the one error mapper, and the caller's deadline that
// defineProvider puts on every client call.
import t from 'tap';
import { fetchExternalSecret } from '../../../src/externalsecret/fetch.js';
import { clientFrom, wrapClient } from '../../../src/providers/client.js';
import { capabilities, defineProvider } from '../../../src/providers/define.js';
import { RemoteRefError, toProviderError } from '../../../src/providers/errors.js';
import { deleteProperty, extractProperty, hasProperty, setProperty } from '../../../src/providers/json-path.js';
import { NO_REFERENCES } from '../../../src/providers/refs.js';
import { ProviderError, type ProviderContext, type SecretsClient } from '../../../src/providers/types.js';

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

t.test('property: an exact key first, else a dotted path; writes by mode', async (t) => {
  const doc = Buffer.from(JSON.stringify({ 'a.b': 'flat', a: { b: 'nested', 'c.d': 'dot' }, list: ['x', 'y'] }));
  t.equal(text(extractProperty(doc, 'a.b')), 'flat', 'the exact top-level key wins');
  t.equal(text(extractProperty(doc, 'a.c\\.d')), 'dot', '\\. escapes a dot');
  t.equal(text(extractProperty(doc, 'list.1')), 'y', 'array index');
  t.same(JSON.parse(setProperty('{"k":"1"}', 'x.y', 'v', 'path')), { k: '1', x: { y: 'v' } }, 'path mode nests');
  t.same(JSON.parse(setProperty('{"k":"1"}', 'x.y', 'v', 'key')), { k: '1', 'x.y': 'v' }, 'key mode is flat');
  t.same(deleteProperty('{"x":{"y":"v"},"k":"1"}', 'x.y', 'path'), { value: '{"k":"1"}', changed: true }, 'emptied parents go');
  t.same(deleteProperty('{"x.y":"v"}', 'x.y', 'key'), { value: undefined, changed: true }, 'nothing left');
  t.equal(hasProperty('{"x":{"y":1}}', 'x.y', 'path'), true);
  t.equal(hasProperty('{"x":{"y":1}}', 'x.y', 'key'), false);
});

t.test('property: prototype segments are refused in every operation and mode', async (t) => {
  for (const property of ['__proto__', 'constructor', 'prototype', 'a.__proto__.b', '__proto__.polluted', 'a\\.b.constructor']) {
    for (const mode of ['path', 'key'] as const) {
      t.throws(() => setProperty('{}', property, 'x', mode), { name: 'RemoteRefError', code: 'InvalidSpec' }, `set ${property} (${mode})`);
      t.throws(() => deleteProperty('{"a":{}}', property, mode), { code: 'InvalidSpec' }, `delete ${property} (${mode})`);
      t.throws(() => hasProperty('{"a":{}}', property, mode), { code: 'InvalidSpec' }, `has ${property} (${mode})`);
    }
    t.throws(() => extractProperty(Buffer.from('{"a":{"b":1}}'), property), { code: 'InvalidSpec' }, `read ${property}`);
  }
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype is untouched');
  t.equal(({} as Record<string, unknown>).b, undefined);
});

t.test('toProviderError: one signature, classified by type and code', async (t) => {
  const scope = { storeId: 'SecretStore/ns/s', op: 'read', key: 'k' };
  const passed = new ProviderError('AuthFailed', 'SecretStore/ns/s', 'no token');
  t.equal(toProviderError(passed, scope), passed, 'a ProviderError passes unchanged');
  t.match(toProviderError(new RemoteRefError('property "p" not found', 'NotFound'), scope), { code: 'NotFound', key: 'k' });
  t.match(toProviderError(Object.assign(new Error('boom value=CANARY'), { code: 'ECONNREFUSED' }), scope), { code: 'Unreachable', message: /cannot connect \(ECONNREFUSED\)/ });
  t.match(toProviderError(Object.assign(new Error('x'), { cause: { code: 'ETIMEDOUT' } }), scope), { code: 'Timeout' }, 'through the cause chain');
  const unknown = toProviderError(new Error('not found: CANARY'), scope);
  t.equal(unknown.code, 'Unknown', 'message text never classifies');
  t.notMatch(unknown.message, /CANARY/, 'and is never passed on');
  t.match(toProviderError({ name: 'Mine' }, scope, () => ({ code: 'Forbidden', message: 'denied' })), { code: 'Forbidden', message: /read: denied/ });
});

t.test('every client call honours the caller deadline', async (t) => {
  const never = () => new Promise<never>(() => undefined);
  // AbortSignal.timeout's timer does not keep the process alive; a store connection would.
  const alive = setInterval(() => undefined, 1000);
  t.teardown(() => clearInterval(alive));
  const provider = defineProvider({
    name: 'slow', capabilities: capabilities([], { versions: false, pushProperty: 'key' }), validateSpec: () => [], references: NO_REFERENCES,
  }, async () => clientFrom(never, async () => undefined));
  const client = await provider.newClient({ storeId: 'SecretStore/ns/slow', spec: {} } as ProviderContext);
  const started = Date.now();
  const err = await fetchExternalSecret(client, { name: 'es', data: [{ secretKey: 'k', remoteRef: { key: 'r' } }] }, { signal: AbortSignal.timeout(50) }).catch((e: Error) => e);
  t.match((err as Error).message, /ExternalSecret "es" data\[0\].*the caller's deadline passed \[Timeout\]/);
  t.ok(Date.now() - started < 5000, 'gave up at the deadline');
  await t.rejects(client.validate({ signal: AbortSignal.abort() }), { code: 'Timeout' }, 'an aborted signal fails at once');
});

t.test('wrapClient sees every store call and keeps the client\'s own members', async (t) => {
  const seen: string[] = [];
  const inner = Object.assign(clientFrom(async (name) => name, async () => undefined), { extra: 42 });
  const wrapped = wrapClient(inner, (name, _args, next) => (seen.push(name), next()));
  const calls: (keyof SecretsClient)[] = ['getSecret', 'getSecretMap', 'getAllSecrets', 'pushSecret', 'deleteSecret', 'secretExists', 'validate'];
  for (const c of calls) await (wrapped[c] as (...a: unknown[]) => Promise<unknown>)({ key: 'k', remoteKey: 'k' }, { remoteKey: 'k' });
  t.same(seen, calls);
  t.equal(wrapped.extra, 42);
});

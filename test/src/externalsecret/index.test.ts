// Provider-independent ExternalSecret semantics (src/externalsecret/): decoding
// strategies, properties, key conversion, rewrites, and data + dataFrom resolution
// against the real fake provider.
import t from 'tap';
import { stopEngine } from '../../../src/templating/go/runner.js';
import { transformKeys } from '../../../src/templating/go/index.js';
import pino from 'pino';
import type { AgentSecret } from '../../../src/agent-config/types.js';
import { provider } from '../../../src/providers/fake/index.js';
import { applyRewrites, decodeValue, expandGoTemplate, fetchExternalSecret } from '../../../src/externalsecret/index.js';
import { convertKey } from '../../../src/providers/key-conversion.js';
import { extractProperty } from '../../../src/providers/json-path.js';
import type { SecretsClient } from '../../../src/providers/types.js';

t.teardown(stopEngine);
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined): string => new TextDecoder().decode(b);
const CANARY = 'CANARY-rr-91b2';

t.test('decoding strategies (ESO semantics)', async (tt) => {
  const raw = 'hi?>';
  const std = Buffer.from(raw).toString('base64'); // aGk/Pg==
  const url = Buffer.from(raw).toString('base64url'); // aGk_Pg (unpadded)
  const urlPadded = `${url}==`;
  tt.equal(dec(decodeValue(undefined, enc(std))), std, 'None by default');
  tt.equal(dec(decodeValue('None', enc(std))), std);
  tt.equal(dec(decodeValue('Base64', enc(std))), raw);
  tt.equal(dec(decodeValue('Base64', enc(`${std.slice(0, 4)}\n${std.slice(4)}`))), raw, 'newlines ignored');
  tt.throws(() => decodeValue('Base64', enc(urlPadded)), /not valid base64/, 'URL alphabet is not Base64');
  tt.throws(() => decodeValue('Base64', enc('abc')), /not valid base64/, 'padding required');
  tt.equal(dec(decodeValue('Base64URL', enc(urlPadded))), raw);
  tt.throws(() => decodeValue('Base64URL', enc(std)), /not valid base64url/);
  tt.equal(dec(decodeValue('Auto', enc(std))), raw, 'Auto: base64');
  tt.equal(dec(decodeValue('Auto', enc(urlPadded))), raw, 'Auto: base64url');
  tt.equal(dec(decodeValue('Auto', enc('not base64!'))), 'not base64!', 'Auto: unchanged');
  try {
    decodeValue('Base64', enc(CANARY));
  } catch (err) {
    tt.notMatch((err as Error).message, CANARY, 'no value in the error');
  }
});

t.test('property extraction', async (tt) => {
  const v = enc('{"a":{"b":{"c":"deep"}},"a.b":"literal","arr":[{"x":1}],"num":3,"t":true}');
  tt.equal(dec(extractProperty(v, 'a.b.c')), 'deep');
  tt.equal(dec(extractProperty(v, 'a.b')), 'literal', 'a top-level key wins over the path');
  tt.equal(dec(extractProperty(v, 'arr.0.x')), '1');
  tt.equal(dec(extractProperty(v, 'num')), '3');
  tt.equal(dec(extractProperty(v, 't')), 'true');
  tt.equal(dec(extractProperty(v, 'a')), '{"b":{"c":"deep"}}');
  tt.throws(() => extractProperty(v, 'a.x'), /property "a\.x" not found/);
  const err = (() => {
    try {
      extractProperty(enc(CANARY), 'x');
    } catch (e) {
      return e as Error;
    }
  })();
  tt.match(err?.message, /value is not JSON/);
  tt.notMatch(err?.message, CANARY);
});

t.test('key conversion and rewrite', async (tt) => {
  tt.equal(convertKey('Default', 'path/to/secret key'), 'path_to_secret_key');
  tt.equal(convertKey(undefined, 'a.b-c_d'), 'a.b-c_d');
  tt.equal(convertKey('Unicode', 'a/b'), 'a_U002f_b');
  tt.equal(expandGoTemplate('$1-${2}x-$name-$$', ['all', 'A', 'B'], { name: 'N' }), 'A-Bx-N-$');
  tt.equal(expandGoTemplate('$1x', ['all', 'A'], {}), '', 'Go reads $1x as the group named "1x"');
  // Go's extract: a leading zero makes a name, not a number; names are Unicode letters and
  // digits; a number has at most nine digits; a malformed reference is a literal $.
  tt.equal(expandGoTemplate('$01|${01}|$0', ['all', 'A'], { '01': 'Z' }), 'Z|Z|all');
  tt.equal(expandGoTemplate('$é|${1|$|${}|$-', ['all', 'A'], {}), '|${1|$|${}|$-');
  tt.equal(expandGoTemplate('$100000000|$1000000000', ['all'], { '1000000000': 'N' }), '|N');
  const map = { 'app/db-user': enc('u'), 'app/db-pass': enc('p'), other: enc('o') };
  const out = await applyRewrites(
    [{ regexp: { source: '^app/(?P<rest>.*)$', target: 'APP_${rest}' } }, { regexp: { source: '-', target: '_' } }],
    map,
  );
  tt.same(Object.keys(out).sort(), ['APP_db_pass', 'APP_db_user', 'other']);
  // transform: ESO's Go template per key, `.value` bound to the key (rendered by the Go engine).
  const upper = await applyRewrites([{ transform: { template: '{{ .value | upper }}' } }, { regexp: { source: '/', target: '_' } }], map, transformKeys);
  tt.same(Object.keys(upper).sort(), ['APP_DB-PASS', 'APP_DB-USER', 'OTHER']);
  await tt.rejects(applyRewrites([{ transform: { template: '{{ .value }}' } }], map), /rewrite\[0\]\.transform needs a Go template engine/);
  await tt.rejects(applyRewrites([{ transform: { template: '{{ .nope }}' } }], map, transformKeys), /rewrite\[0\]\.transform line 1, column 3: .*no entry for key "nope"/);
  await tt.rejects(applyRewrites([{ regexp: { source: '(', target: '' } }], map), /invalid rewrite regexp/);
});

async function fake(): Promise<SecretsClient> {
  return provider.newClient({
    storeId: 'SecretStore/ns/fake',
    namespace: 'ns',
    spec: {
      data: [
        { key: 'db', value: JSON.stringify({ user: 'bob', password: CANARY, host: 'h' }) },
        { key: 'app/a', value: Buffer.from('one').toString('base64') },
        { key: 'app/b', value: Buffer.from('two').toString('base64') },
        { key: 'plain', value: 'explicit' },
        { key: 'weird', value: JSON.stringify({ 'bad key': 'x' }) },
      ],
    },
    readCredential: async () => new Uint8Array(),
    serviceAccountToken: async () => '',
    logger: pino({ level: 'silent' }),
    timeoutMs: 1000,
  });
}

t.test('fetchExternalSecret: dataFrom then data, later entries win', async (tt) => {
  const secret: AgentSecret = {
    name: 'db',
    store: 's',
    dataFrom: [
      { extract: { key: 'db' } },
      { find: { name: { regexp: '^app/' }, decodingStrategy: 'Base64' } },
      // ESO's fake provider converts found keys before the rewrite: it sees `app_a`, not `app/a`.
      { find: { path: 'app/' }, rewrite: [{ regexp: { source: '^app_(.*)$', target: 'raw_$1' } }] },
    ],
    data: [
      { secretKey: 'host', remoteRef: { key: 'plain' } },
      { secretKey: 'pw', remoteRef: { key: 'db', property: 'password' } },
    ],
  };
  const out = await fetchExternalSecret(await fake(), secret);
  tt.same(Object.keys(out).sort(), ['app_a', 'app_b', 'host', 'password', 'pw', 'raw_a', 'raw_b', 'user']);
  tt.equal(dec(out.host), 'explicit', 'data overrides dataFrom');
  tt.equal(dec(out.app_a), 'one', 'find: Default conversion + Base64 decoding');
  tt.equal(dec(out.raw_b), Buffer.from('two').toString('base64'), 'the rewrite saw the converted key');
  tt.equal(dec(out.pw), CANARY);
});

t.test('find: the fake provider converts keys before rewrite, with the strategy asked for (as ESO)', async (tt) => {
  const secret = (conversionStrategy: 'Default' | 'Unicode'): AgentSecret => ({
    name: 'conv',
    store: 's',
    data: [],
    dataFrom: [{ find: { path: 'app/', conversionStrategy }, rewrite: [{ regexp: { source: '^app(_U002f_|_)(.*)$', target: 'k-$2' } }] }],
  });
  tt.same(Object.keys(await fetchExternalSecret(await fake(), secret('Default'))).sort(), ['k-a', 'k-b']);
  tt.same(Object.keys(await fetchExternalSecret(await fake(), secret('Unicode'))).sort(), ['k-a', 'k-b'], 'Unicode: app_U002f_a');
  const noRewrite = await fetchExternalSecret(await fake(), { name: 'conv', dataFrom: [{ find: { path: 'app/', conversionStrategy: 'Unicode' } }] });
  tt.same(Object.keys(noRewrite).sort(), ['app_U002f_a', 'app_U002f_b'], 'converted once, not twice');
});

async function fakeWith(data: { key: string; value: string }[]): Promise<SecretsClient> {
  return provider.newClient({
    storeId: 'SecretStore/ns/fake', namespace: 'ns', spec: { data },
    readCredential: async () => new Uint8Array(), serviceAccountToken: async () => '', logger: pino({ level: 'silent' }), timeoutMs: 1000,
  });
}

// Both were refused before: ESI now serves them as ESO documents them.
t.test('rewrite merge (ESO): Extract and JSON strategies, priority, conflicts', async (tt) => {
  const client = await fakeWith([
    { key: 'cfg/a', value: '{"user":"a","port":5432,"opts":{"z":1,"b":"<x>"}}' },
    { key: 'cfg/b', value: '{"user":"b","host":"h","big":12345678901234567890}' },
    { key: 'bad/c', value: 'not json' },
  ]);
  const run = (merge: object, path = 'cfg/') => fetchExternalSecret(client, { name: 'm', dataFrom: [{ find: { path }, rewrite: [{ merge } as never] }] });
  const text = async (p: Promise<Record<string, Uint8Array>>) => Object.fromEntries(Object.entries(await p).map(([k, v]) => [k, dec(v)]));
  await tt.rejects(run({}), /rewrite\[0\]\.merge: merge conflicts on "user"/, 'a conflict is an error by default');
  tt.same(await text(run({ conflictPolicy: 'Ignore' })), {
    user: 'b', port: '5432', opts: '{"b":"\\u003cx\\u003e","z":1}', host: 'h', big: '12345678901234567890',
  }, 'Extract: sorted keys, the later wins; nested objects as Go marshals them');
  tt.equal((await text(run({ conflictPolicy: 'Ignore', priority: ['cfg_a'] }))).user, 'a', 'a priority key is merged last');
  await tt.rejects(run({ conflictPolicy: 'Ignore', priority: ['nope'] }), /priority key "nope" is not in the fetched keys/);
  tt.equal((await text(run({ conflictPolicy: 'Ignore', priority: ['nope'], priorityPolicy: 'IgnoreNotFound' }))).user, 'b');
  const json = await text(run({ strategy: 'JSON', into: 'all', conflictPolicy: 'Ignore' }));
  tt.same(Object.keys(json).sort(), ['all', 'cfg_a', 'cfg_b'], 'JSON keeps the keys and adds `into`');
  tt.equal(json.all, '{"big":12345678901234567890,"host":"h","opts":{"b":"<x>","z":1},"port":5432,"user":"b"}');
  await tt.rejects(run({ conflictPolicy: 'Ignore' }, 'bad/'), /the value of "bad_c" is not a JSON object/);
});

t.test('nullBytePolicy Fail (ESO): a fetched value with a NUL byte is an error naming its key', async (tt) => {
  const client = await fakeWith([{ key: 'nul', value: 'a\u0000b' }, { key: 'b64', value: Buffer.from('a\u0000b').toString('base64') }, { key: 'ok', value: 'fine' }]);
  const one = (key: string, nullBytePolicy?: 'Fail' | 'Ignore', decodingStrategy?: 'Base64') =>
    fetchExternalSecret(client, { name: 'n', data: [{ secretKey: 'k', remoteRef: { key, ...(nullBytePolicy ? { nullBytePolicy } : {}), ...(decodingStrategy ? { decodingStrategy } : {}) } }] });
  await tt.rejects(one('nul', 'Fail'), /data\[0\] .*fetched secret value for key "k" contains null bytes/);
  await tt.rejects(one('b64', 'Fail', 'Base64'), /contains null bytes/, 'checked after decoding');
  tt.equal(dec((await one('nul', 'Ignore')).k), 'a\u0000b');
  tt.equal(dec((await one('nul')).k), 'a\u0000b', 'Ignore by default');
  tt.equal(dec((await one('ok', 'Fail')).k), 'fine');
  await tt.rejects(fetchExternalSecret(client, { name: 'n', dataFrom: [{ find: { name: { regexp: '.' }, nullBytePolicy: 'Fail' } }] }), /key "nul" contains null bytes/);
});

t.test('fetchExternalSecret: errors name secret, entry and key, never the value', async (tt) => {
  const c = await fake();
  const cases: [AgentSecret['data'], AgentSecret['dataFrom'], RegExp][] = [
    [[{ secretKey: 'x', remoteRef: { key: 'missing' } }], [], /ExternalSecret "s1" data\[0\] \(secretKey "x", remote key "missing"\): .*secret not found \[NotFound\]/],
    [[{ secretKey: 'x', remoteRef: { key: 'db', decodingStrategy: 'Base64' } }], [], /data\[0\].*not valid base64/],
    [[], [{ extract: { key: 'weird' }, rewrite: [{ regexp: { source: 'bad ', target: 'bad/' } }] }], /dataFrom\[0\]\.extract \(remote key "weird"\): resulting key "bad\/key" is not a valid key/],
    [[], [{ sourceRef: { generatorRef: { kind: 'Password', name: 'p' } } }], /dataFrom\[0\]\.sourceRef\.generatorRef \(Password "p"\): sourceRef\.generatorRef is served by ESI's reconciler only/],
    [[{ secretKey: '../x', remoteRef: { key: 'plain' } }], [], /secretKey is not a valid key/],
  ];
  for (const [data, dataFrom, re] of cases) {
    const err = await fetchExternalSecret(c, { name: 's1', data, dataFrom }).catch((e: Error) => e);
    tt.match((err as Error).message, re);
    tt.notMatch((err as Error).message, CANARY);
  }
});

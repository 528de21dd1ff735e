// ESO's generator rules without a cluster (src/generators/): Password's counts, sets,
// repeats, encodings and bounds; UUID; Fake; ClusterGenerator specs; generatorRef checks;
// no value in any error. The reconciler side runs on the real apiserver
// (test/e2e/generators/generators.test.ts).
import t from 'tap';
import { clusterGeneratorSpec, GeneratorError, generatorRefProblem, runGenerator, type GeneratorCalls } from '../../../src/generators/index.js';
import { base32 } from '../../../src/base32.js';
import { DEFAULT_SYMBOLS, encodePassword, MAX_LENGTH, passwords } from '../../../src/generators/password.js';
import { externalSecretSpecProblems } from '../../../src/externalsecret/checks.js';

const dec = (b: Uint8Array | undefined) => new TextDecoder().decode(b);
const count = (s: string, set: string) => [...s].filter((c) => set.includes(c)).length;
const DIGITS = '0123456789';
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const noCalls: GeneratorCalls = {
  ecr: () => Promise.reject(new Error('not called')),
  vault: () => Promise.reject(new Error('not called')),
};

t.test('Password: ESO\'s defaults (24 characters, a quarter digits, a quarter symbols, no repeats)', async (t) => {
  for (let i = 0; i < 50; i++) {
    const p = passwords().password!;
    t.equal(p.length, 24);
    t.equal(count(p, DIGITS), 6);
    t.equal(count(p, DEFAULT_SYMBOLS), 6);
    t.equal(new Set(p).size, 24, 'no character twice');
  }
});

t.test('Password: the documented example (length 42, 5 digits, 5 of "-_$@", repeats allowed)', async (t) => {
  const p = passwords({ length: 42, digits: 5, symbols: 5, symbolCharacters: '-_$@', noUpper: false, allowRepeat: true }).password!;
  t.equal(p.length, 42);
  t.equal(count(p, DIGITS), 5);
  t.equal(count(p, '-_$@'), 5);
  t.equal(count(p, '~!#%^&*()+`={}|[]\\:"<>?,./'), 0, 'only the given symbols');
});

t.test('Password: noUpper, zero digits and symbols, secretKeys give distinct passwords', async (t) => {
  const out = passwords({ length: 20, digits: 0, symbols: 0, noUpper: true, secretKeys: ['a', 'b', 'c'] });
  t.same(Object.keys(out), ['a', 'b', 'c']);
  for (const p of Object.values(out)) t.match(p, /^[a-z]{20}$/);
  t.equal(new Set(Object.values(out)).size, 3, 'one password per key');
  t.ok(Object.values(passwords({ length: 200, allowRepeat: true, digits: 0, symbols: 0 })).some((p) => count(p, UPPER) > 0), 'uppercase by default');
});

t.test('Password: digits and symbols land anywhere, not only at the end', async (t) => {
  const firsts = new Set<string>();
  for (let i = 0; i < 200; i++) firsts.add(passwords({ length: 8, digits: 4, symbols: 0, allowRepeat: true }).password![0]!);
  t.ok([...firsts].some((c) => DIGITS.includes(c)) && [...firsts].some((c) => !DIGITS.includes(c)));
});

t.test('Password: encodings', async (t) => {
  t.equal(encodePassword('foobar', 'base64'), 'Zm9vYmFy');
  t.equal(encodePassword('\u00ff\u00fe?', 'base64url'), Buffer.from('\u00ff\u00fe?').toString('base64url').padEnd(8, '='));
  t.equal(encodePassword('foobar', 'hex'), '666f6f626172');
  t.equal(base32(Buffer.from('foobar')), 'MZXW6YTBOI======', 'RFC 4648 test vector');
  t.equal(base32(Buffer.from('f')), 'MY======');
  t.equal(encodePassword('foobar', 'raw'), 'foobar');
  const p = passwords({ length: 16, encoding: 'hex' }).password!;
  t.match(p, /^[0-9a-f]{32}$/);
});

t.test('Password: impossible or unbounded rules are refused with a clear error', async (t) => {
  const refused = (spec: object, msg: RegExp) => t.throws(() => passwords(spec as never), msg);
  refused({ length: 10, digits: 6, symbols: 6 }, /spec\.digits \(6\) \+ spec\.symbols \(6\) exceed spec\.length \(10\)/);
  refused({ length: 10, digits: 11, symbols: 0, allowRepeat: false }, /exceed spec.length/);
  refused({ length: 20, digits: 11, symbols: 0 }, /11 digits without repeats, but only 10/);
  refused({ length: 80, digits: 0, symbols: 0, noUpper: true }, /80 letters without repeats, but only 26/);
  refused({ length: 10, symbols: 3, digits: 0, symbolCharacters: '-_' }, /3 distinct symbols without repeats, but only 2/);
  refused({ length: 10, symbols: 1, digits: 0, symbolCharacters: '' }, /symbolCharacters is empty/);
  refused({ length: MAX_LENGTH + 1 }, /spec\.length must be an integer from 0 to 1024/);
  refused({ length: 0 }, /at least 1/);
  refused({ length: 1.5 }, /integer/);
  refused({ digits: -1 }, /spec\.digits must be an integer/);
  refused({ encoding: 'rot13' }, /spec\.encoding must be one of raw, base64, base64url, base32, hex/);
  refused({ secretKeys: [] }, /1 to 64 keys/);
  refused({ symbolCharacters: 'x'.repeat(300) }, /at most 256/);
  // A symbol set that overlaps the letters runs dry: an error, not an endless loop. 52 letters
  // use every letter, 'a' among them, whatever the draw (with 51, one run in 52 left 'a' free).
  refused({ length: 53, digits: 0, symbols: 1, symbolCharacters: 'a' }, /overlaps/);
  t.ok(passwords({ length: MAX_LENGTH, allowRepeat: true }).password!.length === MAX_LENGTH, 'the bound itself is served');
});

t.test('UUID and Fake', async (t) => {
  const a = dec((await runGenerator('UUID', {}, noCalls)).uuid);
  const b = dec((await runGenerator('UUID', undefined, noCalls)).uuid);
  t.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.not(a, b, 'a new value at every call');
  const fake = await runGenerator('Fake', { data: { foo: 'bar', baz: 'bang' } }, noCalls);
  t.same(Object.fromEntries(Object.entries(fake).map(([k, v]) => [k, dec(v)])), { foo: 'bar', baz: 'bang' });
  t.same(Object.keys(await runGenerator('Fake', {}, noCalls)), []);
  await t.rejects(runGenerator('Fake', { data: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, 'v'])) }, noCalls), /300 keys \(at most 256\)/);
  const pw = await runGenerator('Password', { length: 12 }, noCalls);
  t.equal(dec(pw.password).length, 12);
});

t.test('ECR output keys are ESO\'s', async (t) => {
  const calls: GeneratorCalls = { ...noCalls, ecr: async () => ({ username: 'AWS', password: 'tok', proxyEndpoint: 'https://1.dkr.ecr.x', expiresAt: new Date(1_700_000_000_000) }) };
  const out = await runGenerator('ECRAuthorizationToken', { region: 'eu-west-1' }, calls);
  t.same(Object.fromEntries(Object.entries(out).map(([k, v]) => [k, dec(v)])), { username: 'AWS', password: 'tok', proxy_endpoint: 'https://1.dkr.ecr.x', expires_at: '1700000000' });
});

t.test('ClusterGenerator: the spec field must match the kind', async (t) => {
  t.same(clusterGeneratorSpec({ kind: 'Password', generator: { passwordSpec: { length: 5 } } }), { kind: 'Password', spec: { length: 5 } });
  t.throws(() => clusterGeneratorSpec({ kind: 'Password', generator: { uuidSpec: {} } }), /exactly passwordSpec for kind Password/);
  t.throws(() => clusterGeneratorSpec({ kind: 'Grafana', generator: { grafanaSpec: {} } }), /"Grafana" is not a generator ESI runs/);
  t.throws(() => clusterGeneratorSpec(undefined), GeneratorError);
});

t.test('generatorRef checks: kind, apiVersion, name (names are names)', async (t) => {
  t.equal(generatorRefProblem({ apiVersion: 'generators.external-secrets.io/v1alpha1', kind: 'Password', name: 'pw' }), undefined);
  t.equal(generatorRefProblem({ kind: 'ClusterGenerator', name: 'pw' }), undefined);
  t.match(generatorRefProblem({ kind: 'Grafana', name: 'g' }), /"Grafana" is not a generator ESI runs/);
  t.match(generatorRefProblem({ apiVersion: 'external-secrets.io/v1', kind: 'Password', name: 'p' }), /apiVersion must be generators.external-secrets.io\/v1alpha1/);
  t.match(generatorRefProblem({ kind: 'Password', name: '../../secrets/x' }), /generatorRef.name must be an RFC 1123 subdomain/);
});

t.test('ExternalSecret checks: generators for the reconciler, refused for the agent', async (t) => {
  const spec = { dataFrom: [{ sourceRef: { generatorRef: { apiVersion: 'generators.external-secrets.io/v1alpha1', kind: 'Password', name: 'pw' } } }] };
  t.same(externalSecretSpecProblems(spec, 'reconciler'), []);
  t.match(externalSecretSpecProblems(spec, 'agent')[0]?.message, /spec\.dataFrom\[0\]\.sourceRef\.generatorRef is served by ESI's reconciler only/);
  const bad = { dataFrom: [{ sourceRef: { generatorRef: { kind: 'Password', name: 'a/b' } } }] };
  t.match(externalSecretSpecProblems(bad, 'reconciler')[0]?.message, /^spec\.dataFrom\[0\]\.sourceRef\.generatorRef\.name must be an RFC 1123 subdomain/);
  // Another store: served with extract or find, for the reconciler only.
  const store = { dataFrom: [{ sourceRef: { storeRef: { name: 'other' } } }] };
  t.match(externalSecretSpecProblems(store, 'reconciler')[0]?.message, /^spec\.dataFrom\[0\] must set exactly one of extract or find/);
  t.same(externalSecretSpecProblems({ dataFrom: [{ extract: { key: 'k' }, sourceRef: { storeRef: { name: 'other' } } }] }, 'reconciler'), []);
  t.match(externalSecretSpecProblems({ secretStoreRef: { name: 's' }, dataFrom: [{ extract: { key: 'k' }, sourceRef: { storeRef: { name: 'other' } } }] }, 'agent')[0]?.message,
    /^spec\.dataFrom\[0\]\.sourceRef\.storeRef is served by ESI's reconciler only/);
});

t.test('no generated value in an error', async (t) => {
  const err = await runGenerator('Fake', { data: { k: 42 as unknown as string } }, noCalls).catch((e: Error) => e);
  t.type(err, GeneratorError);
  t.notMatch((err as Error).message, /42/);
});

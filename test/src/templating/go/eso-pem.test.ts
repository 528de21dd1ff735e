// ESO's PEM and JWK helpers (filterPEM, jwkPublicKeyPem, jwkPrivateKeyPem) rendered by the
// TypeScript engine against the Go oracle (test/support/templating/go-oracle/): byte-identical
// output, failure where Go fails; PEM inputs hand-picked for Go's pem.Decode edge cases and
// seeded combinations of PEM fragments; keys generated per run.
import t from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { b64, prng, type CorpusRequest } from '../../../support/templating/go-corpus.js';
import { compare, topReasons } from '../../../support/templating/go-oracle/oracle.js';

const CANARY = 'canary-secret-7f3a';
const body = (s: string) => Buffer.from(s).toString('base64').replace(/(.{64})/g, '$1\n');
const block = (type: string, content = 'hello', headers = '') => `-----BEGIN ${type}-----\n${headers}${body(content)}\n-----END ${type}-----\n`;

const PEM_INPUTS = [
  block('CERTIFICATE') + block('PRIVATE KEY', 'k'.repeat(100)) + block('CERTIFICATE', 'second'),
  `junk before\n${block('CERTIFICATE')}trailing junk`,
  block('Certificate') + block('certificate'),
  block('RSA PRIVATE KEY', 'x', 'Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\nZ-Key:  v \n\n'),
  block('CERTIFICATE').replace(/\n/g, '\r\n'),
  '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n',
  '-----BEGIN CERTIFICATE-----\r\n-----END CERTIFICATE-----',
  '-----BEGIN CERTIFICATE-----\naGVs bG8=\t\n-----END CERTIFICATE-----   \n',
  '-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n' + block('CERTIFICATE'),
  '-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERT-----\n' + block('CERTIFICATE', 'after'),
  '-----BEGIN CERTIFICATE-----\n' + block('CERTIFICATE', 'nested'),
  '-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE----- x\n',
  'x-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n',
  block('A:B'),
  '-----BEGIN CERTIFICATE-----\nk: v\n-----END CERTIFICATE-----\n',
  '-----BEGIN CERTIFICATE-----\nk: v\n\naGVsbG8=\n-----END CERTIFICATE-----',
  '-----BEGIN CERTIFICATE-----\naGVsbG8\n-----END CERTIFICATE-----\n',
  '-----BEGIN CERTIFICATE-----\naGVsbG9=\n-----END CERTIFICATE-----\n',
  block('CERTIFICATE', 'x'.repeat(1000)),
  'only text, no PEM',
  '',
  block('PRIVATE KEY') + 'junk',
  `-----BEGIN CERTIFICATE-----\n${body(CANARY)}`,
  '-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n',
  block('CERTIFICATE') + '\n\n' + block('CERTIFICATE', 'x'),
];

const FRAGMENTS = [
  '-----BEGIN CERTIFICATE-----\n', '-----END CERTIFICATE-----\n', '-----BEGIN PRIVATE KEY-----\n', '-----END PRIVATE KEY-----\n',
  'aGVsbG8=\n', 'aGVs\n', ' \t', '\r\n', '\n', 'k: v\n', 'junk', '-----END ', '-----BEGIN ', 'CERTIFICATE', '-----', ':', '==',
];

function fuzzed(count: number, seed: number): string[] {
  const rnd = prng(seed);
  return Array.from({ length: count }, () => Array.from({ length: 3 + Math.floor(rnd() * 12) }, () => FRAGMENTS[Math.floor(rnd() * FRAGMENTS.length)]!).join(''));
}

function pemRequests(inputs: string[]): CorpusRequest[] {
  return inputs.map((input, i) => ({
    data: { pem: b64(input) },
    jobs: ['{{ .pem | filterPEM "CERTIFICATE" }}', '{{ filterPEM "private key" .pem }}', '{{ .pem | filterPEM "A:B" | b64enc }}', '{{ .pem | filterPEM "RSA PRIVATE KEY" }}'].map((source, j) => ({ name: `pem-${i}-${j}`, source })),
  }));
}

t.test('filterPEM renders as ESO renders it, edge cases of PEM included', async (t) => {
  const c = compare(pemRequests([...PEM_INPUTS, ...fuzzed(600, 20261202)]));
  t.same(c.diffs, [], 'byte-identical output, failure where Go fails');
  t.equal(c.refused, 0, `none refused: ${topReasons(c)}`);
  t.ok(c.bothFail > 0 && c.tsOfGoOk > 100, `${c.tsOfGoOk} rendered, ${c.bothFail} failing as in Go`);
});

t.test('a failing filterPEM does not quote the value', async (t) => {
  const { renderGoTemplates } = await import('../../../../src/templating/go/index.js');
  const err = (() => {
    try {
      renderGoTemplates([{ name: 'p', source: '{{ .pem | filterPEM "CERTIFICATE" }}' }], { pem: Buffer.from(`${CANARY} not pem`) });
    } catch (e) {
      return e as Error;
    }
  })();
  t.ok(err, 'fails');
  t.notMatch(String(err?.message), CANARY);
});

function keys() {
  const out: Record<string, string> = {};
  const add = (name: string, type: 'rsa' | 'ec' | 'ed25519', opts: object) => {
    const { privateKey } = generateKeyPairSync(type as 'rsa', opts as { modulusLength: number });
    const jwk = privateKey.export({ format: 'jwk' });
    out[name] = JSON.stringify(jwk);
    const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = jwk;
    out[`${name}-pub`] = JSON.stringify(pub);
  };
  add('rsa', 'rsa', { modulusLength: 2048 });
  add('p256', 'ec', { namedCurve: 'P-256' });
  add('p384', 'ec', { namedCurve: 'P-384' });
  add('p521', 'ec', { namedCurve: 'P-521' });
  add('ed', 'ed25519', {});
  const rsa = JSON.parse(out.rsa!) as Record<string, string>;
  const p256 = JSON.parse(out.p256!) as Record<string, string>;
  const ed = JSON.parse(out.ed!) as Record<string, string>;
  Object.assign(out, {
    'rsa-padded': JSON.stringify({ KTY: 'RSA', N: `${rsa.n}`, e: 'AQAB==', d: rsa.d, P: rsa.p, q: rsa.q, extra: 1 }),
    'rsa-inconsistent': JSON.stringify({ ...rsa, q: rsa.p }),
    'rsa-no-d': JSON.stringify({ ...rsa, d: undefined }),
    'p256-bad-point': JSON.stringify({ ...p256, y: p256.x }),
    'p256-wrong-d': JSON.stringify({ ...p256, d: p256.x }),
    'p256-short-x': JSON.stringify({ ...p256, x: Buffer.concat([Buffer.alloc(1), Buffer.from(p256.x!, 'base64url')]).toString('base64url') }),
    'ec-curve': JSON.stringify({ ...p256, crv: 'P-192' }),
    'ed-wrong-x': JSON.stringify({ ...ed, x: 'AAAA' }),
    'ed-mismatched-x': JSON.stringify({ ...ed, x: JSON.parse(out['p256']!).x }),
    'ed-bad-d': JSON.stringify({ ...ed, d: 'AAAA' }),
    'okp-x448': JSON.stringify({ ...ed, crv: 'X448' }),
    'kty-oct': JSON.stringify({ kty: 'oct', k: CANARY }),
    'not-json': `{"kty":"RSA","n":"${CANARY}"`,
    'n-number': JSON.stringify({ ...rsa, n: 5 }),
    'n-null': JSON.stringify({ ...rsa, n: null }),
    'bad-b64': JSON.stringify({ ...rsa, e: 'A*B' }),
    'json-null': 'null',
    'json-list': '[1]',
  });
  return out;
}

t.test('jwkPublicKeyPem and jwkPrivateKeyPem render as ESO renders them', async (t) => {
  const data = Object.fromEntries(Object.entries(keys()).map(([k, v]) => [k, b64(v)]));
  const jobs = Object.keys(data).flatMap((k) => [
    { name: `pub-${k}`, source: `{{ index . "${k}" | jwkPublicKeyPem }}` },
    { name: `priv-${k}`, source: `{{ index . "${k}" | jwkPrivateKeyPem }}` },
  ]);
  const c = compare([{ data, jobs }]);
  t.same(c.diffs, [], 'byte-identical PEM, failure where Go fails');
  t.equal(c.refused, 0, `none refused: ${topReasons(c)}`);
  t.ok(c.tsOfGoOk >= 15, `${c.tsOfGoOk} keys encoded, ${c.bothFail} failing as in Go`);
});

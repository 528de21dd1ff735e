// ESO's pemToPkcs12[Pass] and fullPemToPkcs12[Pass] by round trip (the archives carry random
// salts and IVs): what the TypeScript engine encodes, the Go oracle's go-pkcs12 and openssl
// decode to the same key and certificates; and what Go encodes from the same PEM, the
// TypeScript engine decodes to the same PEM as Go's own decoding of ESI's archive.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderGoTemplates } from '../../../../src/templating/go/index.js';
import { b64 } from '../../../support/templating/go-corpus.js';
import { oracle } from '../../../support/templating/go-oracle/oracle.js';

const PASS = 'p12-pass-é';
const dir = mkdtempSync(join(tmpdir(), 'esi-p12e-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
ssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=ca', '-addext', 'basicConstraints=critical,CA:TRUE');
ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'rsa.key', '-out', 'rsa.csr', '-subj', '/CN=rsa');
ssl('x509', '-req', '-in', 'rsa.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', '3', '-days', '2', '-out', 'rsa.crt');
ssl('ec', '-in', 'ca.key', '-out', 'ca-sec1.key');
const file = (f: string) => readFileSync(join(dir, f), 'utf8');
const inputs = { cert: file('rsa.crt'), chain: file('rsa.crt') + file('ca.crt'), key: file('rsa.key'), cakey: file('ca-sec1.key'), cacert: file('ca.crt') };
const data = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, b64(v)]));
const ENCODE = [
  '{{ pemToPkcs12 .cert .key }}', `{{ pemToPkcs12Pass .cert .key "${PASS}" }}`, '{{ fullPemToPkcs12 .chain .key }}',
  `{{ fullPemToPkcs12Pass .chain .key "${PASS}" }}`, '{{ pemToPkcs12 .cacert .cakey }}',
];
const pass = (src: string) => (src.includes('Pass') ? PASS : '');
const DECODE = (p: string) => (p ? [`{{ .p | b64dec | pkcs12keyPass "${p}" }}`, `{{ .p | b64dec | pkcs12certPass "${p}" }}`] : ['{{ .p | b64dec | pkcs12key }}', '{{ .p | b64dec | pkcs12cert }}']);

const byTs = ENCODE.map((source) => new TextDecoder().decode(renderGoTemplates([{ name: 'e', source }], Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, Buffer.from(v)])))[0]));
const [byGoRes] = oracle([{ data, jobs: ENCODE.map((source, i) => ({ name: `g${i}`, source })) }]);
const byGo = byGoRes!.map((r) => Buffer.from(r.output!, 'base64').toString());
const goDecode = (archive: string, p: string) => oracle([{ data: { p: b64(archive) }, jobs: DECODE(p).map((source, i) => ({ name: `d${i}`, source })) }])[0]!.map((r) => (r.error ? r.error : Buffer.from(r.output ?? '', 'base64').toString()));
const tsDecode = (archive: string, p: string) => DECODE(p).map((source) => new TextDecoder().decode(renderGoTemplates([{ name: 'd', source }], { p: Buffer.from(archive) })[0]));

t.test("what ESI encodes, Go decodes to what Go's own archive decodes to", async (t) => {
  ENCODE.forEach((src, i) => {
    const want = goDecode(byGo[i]!, pass(src));
    t.match(want[1], /^-----BEGIN CERTIFICATE-----/, `${src}: Go decodes its own archive`);
    t.same(goDecode(byTs[i]!, pass(src)), want, `${src}: Go decodes ESI's archive alike`);
  });
});

t.test("what Go encodes, ESI decodes as Go does", async (t) => {
  ENCODE.forEach((src, i) => t.same(tsDecode(byGo[i]!, pass(src)), goDecode(byGo[i]!, pass(src)), src));
});

t.test("openssl reads ESI's archives: the key and every certificate", async (t) => {
  ENCODE.forEach((src, i) => {
    writeFileSync(join(dir, 'x.p12'), Buffer.from(byTs[i]!, 'base64'));
    const out = ssl('pkcs12', '-in', 'x.p12', '-nodes', '-passin', `pass:${pass(src)}`).toString();
    t.equal(out.match(/BEGIN CERTIFICATE/g)?.length, src.includes('full') ? 2 : 1, `${src}: certificates`);
    t.match(out, /BEGIN PRIVATE KEY/, `${src}: key`);
  });
});

t.test('errors where Go fails', async (t) => {
  const fails = (source: string) => t.throws(() => renderGoTemplates([{ name: 'f', source }], { cert: Buffer.from(inputs.cert), junk: Buffer.from('no pem') }), source);
  fails('{{ pemToPkcs12 .junk .junk }}');
  fails('{{ pemToPkcs12 .cert .junk }}');
  t.ok(oracle([{ data: { cert: b64(inputs.cert), junk: b64('no pem') }, jobs: [{ name: 'a', source: '{{ pemToPkcs12 .junk .junk }}' }, { name: 'b', source: '{{ pemToPkcs12 .cert .junk }}' }] }])[0]!.every((r) => r.error), 'Go fails both');
});

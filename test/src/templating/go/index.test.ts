// ESO's Go templates (engine v2) rendered by ESI's WebAssembly Go engine: ESO's documented
// uses (Sprig, pkcs12*, filterPEM, filterCertChain, jwk*, toYaml/fromYaml), the ExternalSecret
// target.template semantics, rewrite transforms, errors that name the template and line,
// and the sandbox (no env, bounded output and time, no value in messages).
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { constants, createHash, generateKeyPairSync, publicEncrypt } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate as selfsigned } from 'selfsigned';
import {
  GO_RENDER_TIMEOUT_MS,
  parseGoTemplates,
  renderGoTemplates,
  transformKeys,
} from '../../../../src/templating/go/index.js';
import { stopEngine } from '../../../../src/templating/go/runner.js';
import { applyExternalSecretTemplate, selectTemplateEngine, TemplateEngine } from '../../../../src/templating/index.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined): string => new TextDecoder().decode(b);
const CANARY = 'CANARY-s3cr3t-9a4c';
t.teardown(stopEngine);

const render = (source: string, data: Record<string, string | Uint8Array> = {}): string => {
  const bytes = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, typeof v === 'string' ? enc(v) : v]));
  return dec(renderGoTemplates([{ name: 't', source }], bytes)[0]);
};

t.test('ESO documentation examples render as ESO renders them', async (t) => {
  const config = 'datasources:\n- name: Graphite\n  password: "{{ .password }}"\n  user: "{{ .user }}"\n';
  t.equal(render(config, { password: 'p@ss', user: 'admin' }), 'datasources:\n- name: Graphite\n  password: "p@ss"\n  user: "admin"\n');
  t.equal(render('{{ .dburl | replace "postgres://" "postgresql://" }}', { dburl: 'postgres://db:5432/x' }), 'postgresql://db:5432/x');
  t.equal(render('{{ index . "service-account-token" }}', { 'service-account-token': 'tok' }), 'tok');
  const docker = '{"auths":{"{{ .registry }}":{"auth":"{{ printf "%s:%s" .user .pass | b64enc }}"}}}';
  t.equal(render(docker, { registry: 'r.io', user: 'u', pass: 'p' }), `{"auths":{"r.io":{"auth":"${Buffer.from('u:p').toString('base64')}"}}}`);
  t.equal(render('{{ .json | fromJson | toYaml }}', { json: '{"b":[1,2],"a":"x"}' }), 'a: x\nb:\n- 1\n- 2');
  t.equal(render('{{ (.yaml | fromYaml).db.host }}', { yaml: 'db:\n  host: h1\n' }), 'h1');
  const v = Buffer.from('abc').toString('base64');
  t.equal(render('{{ .v | b64dec | upper }}-{{ .v | sha256sum }}', { v }), `ABC-${createHash('sha256').update(v).digest('hex')}`);
});

t.test('ESO helpers: PKCS#12, PEM filters, JWK', async (t) => {
  const pems = await selfsigned([{ name: 'commonName', value: 'esi.test' }], { keySize: 2048 });
  const data = { cert: pems.cert, key: pems.private };
  const p12b64 = render('{{ pemToPkcs12 .cert .key }}', data);
  const p12 = new Uint8Array(Buffer.from(p12b64, 'base64'));
  t.equal(render('{{ .p12 | pkcs12cert }}', { p12 }).trim(), pems.cert.trim().replace(/\r\n/g, '\n'), 'pkcs12cert gives the certificate back');
  t.match(render('{{ .p12 | pkcs12key }}', { p12 }), /^-----BEGIN PRIVATE KEY-----\n/);
  const withPass = new Uint8Array(Buffer.from(render('{{ pemToPkcs12Pass .cert .key "pw" }}', data), 'base64'));
  t.equal(render('{{ .p12 | pkcs12certPass "pw" }}', { p12: withPass }).trim(), pems.cert.trim().replace(/\r\n/g, '\n'));
  t.throws(() => render('{{ .p12 | pkcs12certPass "wrong" }}', { p12: withPass }), /unable to decode the archive/);
  const bundle = `${pems.private}\n${pems.cert}`;
  t.equal(render('{{ .b | filterPEM "CERTIFICATE" }}', { b: bundle }).trim(), pems.cert.trim().replace(/\r\n/g, '\n'));
  t.equal(render('{{ .b | filterCertChain "leaf" }}', { b: pems.cert }).trim(), pems.cert.trim().replace(/\r\n/g, '\n'), 'a certificate that is not a CA is a leaf');

  for (const type of ['rsa', 'ec', 'ed25519'] as const) {
    const pair = type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : type === 'ec' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
    const jwk = JSON.stringify(pair.privateKey.export({ format: 'jwk' }));
    t.equal(render('{{ .k | jwkPublicKeyPem }}', { k: jwk }), pair.publicKey.export({ type: 'spki', format: 'pem' }), `${type}: jwkPublicKeyPem`);
    t.equal(render('{{ .k | jwkPrivateKeyPem }}', { k: jwk }), pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), `${type}: jwkPrivateKeyPem`);
  }
});

// ESO's helper set is not upstream Sprig: before, these were "not defined"
// (hexdec, certSANs, rsaDecrypt, pemTruststoreToPKCS12*), getHostByName was served, and
// filterPEM failed for an absent type and matched the type case-sensitively.
t.test("ESO's own helpers: hexdec, certSANs, rsaDecrypt, pemTruststoreToPKCS12, filterPEM as ESO", async (t) => {
  t.equal(render('{{ .h | hexdec }}', { h: Buffer.from('hé!').toString('hex') }), 'hé!');
  t.throws(() => render('{{ .h | hexdec }}', { h: 'zz' }), /hexdec: the input is not hexadecimal/);
  const dir = mkdtempSync(join(tmpdir(), 'esi-gotpl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem'), '-days', '1',
    '-subj', '/CN=esi.test', '-addext', 'subjectAltName=DNS:a.esi.test,DNS:b.esi.test,IP:10.0.0.1,email:ops@esi.test,URI:spiffe://td/w'], { stdio: 'ignore' });
  const cert = readFileSync(join(dir, 'c.pem'), 'utf8');
  const key = readFileSync(join(dir, 'k.pem'), 'utf8');
  t.equal(render('{{ .c | certSANs | join "," }}', { c: `junk before\n${cert}` }), 'a.esi.test,b.esi.test,10.0.0.1,ops@esi.test,spiffe://td/w');
  t.throws(() => render('{{ .c | certSANs }}', { c: 'no pem' }), /certSANs: failed to decode PEM block/);

  const ct = (hash: string) => new Uint8Array(publicEncrypt({ key: cert, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: hash }, Buffer.from(CANARY)));
  t.equal(render('{{ rsaDecrypt "RSA-OAEP" "SHA256" .ct .key }}', { ct: ct('sha256'), key }), CANARY);
  t.equal(render('{{ rsaDecrypt "RSA-OAEP" "SHA1" .ct .key }}', { ct: ct('sha1'), key }), CANARY);
  t.equal(render('{{ rsaDecrypt "None" "" .v .key }}', { v: 'as-is', key }), 'as-is');
  t.throws(() => render('{{ rsaDecrypt "RSA-OAEP" "SHA512" .ct .key }}', { ct: ct('sha256'), key }), /rsaDecrypt: error decrypting data with RSA/);
  t.throws(() => render('{{ rsaDecrypt "PKCS1" "SHA256" .ct .key }}', { ct: ct('sha256'), key }), /decryption scheme PKCS1 is not supported/);

  const store = (tpl: string) => Buffer.from(render(tpl, { c: cert + cert }), 'base64');
  const certsIn = (p12: Buffer, pass: string) => {
    writeFileSync(join(dir, 's.p12'), p12);
    return execFileSync('openssl', ['pkcs12', '-in', join(dir, 's.p12'), '-nokeys', '-passin', `pass:${pass}`], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  };
  t.equal(certsIn(store('{{ .c | pemTruststoreToPKCS12 }}'), '').match(/BEGIN CERTIFICATE/g)?.length, 2, 'a trust store of both certificates');
  t.match(certsIn(store('{{ pemTruststoreToPKCS12Pass .c "pw" }}'), 'pw'), /BEGIN CERTIFICATE/);

  const bundle = `${key}\n${cert}`;
  t.equal(render('{{ .b | filterPEM "certificate" }}', { b: bundle }).trim(), cert.trim(), 'the type matches case-insensitively');
  t.equal(render('{{ .b | filterPEM "EC PRIVATE KEY" }}', { b: bundle }), '', 'no block of the type: empty, not an error');
  t.equal(render('{{ .b | filterPEM "CERTIFICATE" }}', { b: `-----BEGIN CERTIFICATE-----\n!!notbase64!!\n-----END CERTIFICATE-----\n${cert}` }).trim(), cert.trim(), 'an undecodable block is skipped');
  t.throws(() => render('{{ .b | filterPEM "CERTIFICATE" }}', { b: 'just text' }), /filterPEM: found junk/);
  t.same(parseGoTemplates([{ name: 'h', source: '{{ getHostByName "localhost" }}' }]).map((e) => e.reason), ['function "getHostByName" not defined'], 'removed by ESO for safety');
});

t.test('ExternalSecret target.template with the Go engine', async (t) => {
  const tpl = {
    engineVersion: 'v2' as const,
    data: { dsn: 'postgres://{{ .username }}:{{ .password }}@db/app', '{{ .username }}-copy': '{{ .username | upper }}' },
    templateFrom: [{ literal: 'a: "{{ .username | title }}"\nb: x' }, { target: 'Labels', literal: 'l: v' }],
  };
  t.equal(selectTemplateEngine('db', undefined, tpl), 'go', 'Go by default, as ESO');
  const data = { username: enc('u'), password: enc(CANARY) };
  const out = applyExternalSecretTemplate(new TemplateEngine(), { name: 'db', template: tpl, choice: 'go' }, data);
  t.same(Object.keys(out).sort(), ['a', 'b', 'dsn', 'u-copy'], 'keys of template.data are templates too (engine v2)');
  t.equal(dec(out.dsn), `postgres://u:${CANARY}@db/app`);
  t.equal(dec(out['u-copy']), 'U');
  t.equal(dec(out.a), 'U');
  const merged = applyExternalSecretTemplate(new TemplateEngine(), { name: 'db', template: { mergePolicy: 'Merge', data: { x: '{{ .username }}' } }, choice: 'go' }, data);
  t.same(Object.keys(merged).sort(), ['password', 'username', 'x']);
  t.throws(() => selectTemplateEngine('db', undefined, { engineVersion: 'v1', data: { k: '{{ .a }}' } }), /engineVersion v1 .* not supported by ESI; use engineVersion v2/);
});

t.test('syntax errors and unknown functions are found at parse time, with the template and line', async (t) => {
  const errors = parseGoTemplates([
    { name: 'ExternalSecret db target.template.data.ok', source: '{{ .a | upper }}' },
    { name: 'ExternalSecret db target.template.data.bad', source: 'line one\n{{ .a | nosuchfunc }}' },
    { name: 'ExternalSecret db target.template.data.open', source: 'x\ny\n{{ if .a }}' },
  ]);
  t.same(errors.map((e) => e.message), [
    'template ExternalSecret db target.template.data.bad line 2: function "nosuchfunc" not defined',
    'template ExternalSecret db target.template.data.open line 3: unexpected EOF',
  ]);
  t.throws(
    () => selectTemplateEngine('db', undefined, { data: { k: '{{ .a ' } }),
    /template ExternalSecret db target\.template\.data\.k line 1: unclosed action/,
  );
});

t.test('sandbox: no environment, bounded output and time, no value in messages', async (t) => {
  t.same(parseGoTemplates([{ name: 'e', source: '{{ env "HOME" }}' }, { name: 'x', source: '{{ expandenv "$HOME" }}' }]).map((e) => e.reason), [
    'function "env" not defined',
    'function "expandenv" not defined',
  ]);
  t.throws(() => render('{{ "x" | repeat 2000000 }}'), /rendered output exceeds the size limit/);
  t.throws(() => render('{{ $x := "x" | repeat 600000000 }}'), /repeat: the result would exceed the size limit/);
  t.throws(() => render('{{ range until 2000000000 }}{{ end }}'), /until: at most 1000000 items/);
  const start = Date.now();
  t.throws(() => render('{{ range $i := until 1000 }}{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}{{ end }}'), /took longer than \d+ ms and was stopped/);
  t.ok(Date.now() - start < GO_RENDER_TIMEOUT_MS + 3000, 'stopped at the deadline');
  t.equal(render('{{ .a }}', { a: 'after' }), 'after', 'a fresh engine serves the next template');
  let message = '';
  try {
    render('{{ fail .password }}', { password: CANARY });
  } catch (err) {
    message = (err as Error).message;
  }
  t.match(message, /template t line 1/);
  t.notMatch(message, CANARY, 'the value is redacted');
  t.throws(() => render('{{ .missing }}'), /map has no entry for key "missing"/, 'missing keys are errors, as in ESO');
});

t.test('rewrite transform: each key rendered with .value', async (t) => {
  const out = transformKeys('rewrite[0].transform', '{{ .value | upper | replace "-" "_" }}', { 'db-user': enc('u'), 'db-pass': enc('p') });
  t.same(Object.keys(out).sort(), ['DB_PASS', 'DB_USER']);
  t.equal(dec(out.DB_USER), 'u');
});

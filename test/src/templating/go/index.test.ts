// ESO's Go templates (engine v2) rendered by ESI's Go-template engine: ESO's documented
// uses (Sprig, toYaml, hexdec; the certificate helpers refused by name), the ExternalSecret
// target.template semantics, rewrite transforms, errors that name the template and line,
// and the bounds (no env, bounded output and time, no value in messages).
import t from 'tap';
import { createHash } from 'node:crypto';
import {
  GO_RENDER_TIMEOUT_MS,
  parseGoTemplates,
  renderGoTemplates,
  transformKeys,
} from '../../../../src/templating/go/index.js';
import { applyExternalSecretTemplate, selectTemplateEngine, TemplateEngine } from '../../../../src/templating/index.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined): string => new TextDecoder().decode(b);
const CANARY = 'CANARY-s3cr3t-9a4c';

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
  const v = Buffer.from('abc').toString('base64');
  t.equal(render('{{ .v | b64dec | upper }}-{{ .v | sha256sum }}', { v }), `ABC-${createHash('sha256').update(v).digest('hex')}`);
});

// ESI does not render ESO's other certificate and key helpers (docs/decisions/0087-templating-engines.md;
// filterPEM, filterCertChain, the JWK and PKCS#12 helpers render: go-eso-*.test.ts):
// a template calling one is denied at admission with the function's name, where before the
// WebAssembly Go engine rendered it.
t.test("ESO's other certificate and key helpers are refused by name; hexdec renders", async (t) => {
  const helpers = ['certSANs', 'fromYaml'];
  const errors = parseGoTemplates(helpers.map((h) => ({ name: h, source: `{{ .v | ${h} }}` })));
  t.same(errors.map((e) => e.reason), helpers.map((h) => `not supported by ESI: function "${h}" is not supported by ESI (docs/templates.md lists what ESI renders)`));
  t.equal(render('{{ .h | hexdec }}', { h: Buffer.from('hé!').toString('hex') }), 'hé!');
  t.equal(render('{{ .h | hexdec | b64enc }}', { h: 'ff00' }), '/wA=', 'bytes that are not UTF-8 stay bytes');
  t.throws(() => render('{{ .h | hexdec }}', { h: 'zz' }), /hexdec: the input is not hexadecimal/);
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

t.test('no environment, bounded output and time, no value in messages', async (t) => {
  t.same(parseGoTemplates([{ name: 'e', source: '{{ env "HOME" }}' }, { name: 'x', source: '{{ expandenv "$HOME" }}' }]).map((e) => e.reason), [
    'function "env" not defined',
    'function "expandenv" not defined',
  ]);
  t.throws(() => render('{{ "x" | repeat 2000000 }}'), /rendered output exceeds the size limit/);
  t.throws(() => render('{{ $x := "x" | repeat 600000000 }}'), /repeat: the result would exceed the size limit/);
  t.throws(() => render('{{ range until 2000000000 }}{{ end }}'), /until: at most 1000000 items/);
  const start = Date.now();
  t.throws(() => render('{{ range 1000 }}{{ range 1000 }}{{ range 1000 }}{{ end }}{{ end }}{{ end }}'), /took longer than \d+ ms and was stopped/);
  t.ok(Date.now() - start < GO_RENDER_TIMEOUT_MS + 3000, 'stopped at the deadline');
  t.equal(render('{{ .a }}', { a: 'after' }), 'after', 'the next template renders');
  let message = '';
  try {
    render('{{ fail .password }}', { password: CANARY });
  } catch (err) {
    message = (err as Error).message;
  }
  t.equal(message, 'template t: executing: error calling fail: <redacted>', 'the value is redacted');
  t.throws(() => render('{{ .missing }}'), /map has no entry for key "missing"/, 'missing keys are errors, as in ESO');
});

t.test('rewrite transform: each key rendered with .value', async (t) => {
  const out = transformKeys('rewrite[0].transform', '{{ .value | upper | replace "-" "_" }}', { 'db-user': enc('u'), 'db-pass': enc('p') });
  t.same(Object.keys(out).sort(), ['DB_PASS', 'DB_USER']);
  t.equal(dec(out.DB_USER), 'u');
});

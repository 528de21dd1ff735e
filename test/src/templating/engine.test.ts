// The handlebars engine: helpers, strict mode, prototype isolation, value-free errors,
// Go-template detection and ExternalSecret target.template support.
import t, { type Test } from 'tap';
type Tap = Test;
import {
  applyExternalSecretTemplate,
  buildContext,
  detectGoTemplate,
  selectTemplateEngine,
  TemplateEngine,
  TemplateError,
} from '../../../src/templating/index.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined): string => new TextDecoder().decode(b);
const CANARY = 'CANARY-s3cr3t-7f1e';

const PEM_CERT = '-----BEGIN CERTIFICATE-----\nMIIBcert1\n-----END CERTIFICATE-----';
const PEM_CERT2 = '-----BEGIN CERTIFICATE-----\nMIIBcert2\n-----END CERTIFICATE-----';
const PEM_KEY = '-----BEGIN EC PRIVATE KEY-----\nMHckey\n-----END EC PRIVATE KEY-----';

const ctx = buildContext({
  db: {
    password: enc(CANARY),
    user: enc('app_user'),
    json: enc('{"host":"db.local","ports":[5432,5433],"nested":{"a":"b"}}'),
    b64: enc(Buffer.from('hello world').toString('base64')),
    b64url: enc(Buffer.from('??>>').toString('base64url')),
    bundle: enc(`${PEM_KEY}\n${PEM_CERT}\n${PEM_CERT2}\n`),
    empty: enc(''),
  },
  'my-db': { password: enc('dash') },
});

const engine = new TemplateEngine();
const render = (src: string, name = 'annotation esi.dev/template-app.conf'): string => engine.render(name, src, ctx);

function renderError(tt: Tap, src: string): TemplateError {
  try {
    render(src);
  } catch (err) {
    tt.type(err, TemplateError, `${src} throws a TemplateError`);
    tt.notMatch((err as Error).message, CANARY, 'error does not echo the value');
    return err as TemplateError;
  }
  tt.fail(`${src} should have failed`);
  return new TemplateError('', '');
}


t.test('context: one object per ExternalSecret, keys as strings', async (tt) => {
  tt.equal(render('{{db.user}}:{{db.password}}'), `app_user:${CANARY}`);
  tt.equal(render('{{[my-db].password}}'), 'dash');
  tt.equal(render('{{#each db}}{{@key}},{{/each}}'), 'password,user,json,b64,b64url,bundle,empty,');
  tt.equal(render('<{{db.user}}> & "x"'), '<app_user> & "x"', 'no HTML escaping');
});

t.test('helpers', async (tt) => {
  const cases: [string, string][] = [
    ['{{b64enc db.user}}', Buffer.from('app_user').toString('base64')],
    ['{{b64dec db.b64}}', 'hello world'],
    ['{{b64urlenc "??>>"}}', Buffer.from('??>>').toString('base64url')],
    ['{{b64urldec db.b64url}}', '??>>'],
    ['{{toJson db.user}}', '"app_user"'],
    ['{{#with (fromJson db.json)}}{{host}}:{{ports.[1]}} {{nested.a}}{{/with}}', 'db.local:5433 b'],
    ['{{toJson (fromJson db.json)}}', '{"host":"db.local","ports":[5432,5433],"nested":{"a":"b"}}'],
    ['{{toYaml (fromJson db.json)}}', 'host: db.local\nports:\n  - 5432\n  - 5433\nnested:\n  a: b'],
    ['{{upper db.user}} {{lower "ABC"}} {{title "hello big world"}}', 'APP_USER abc Hello Big World'],
    ['{{camelcase "foo_bar-baz"}} {{snakecase "fooBar Baz"}} {{kebabcase "FooBar"}}', 'fooBarBaz foo_bar_baz foo-bar'],
    ['{{default "fallback" db.missing}}|{{default "fallback" db.empty}}|{{default "fallback" db.user}}', 'fallback|fallback|app_user'],
    ['{{indent 2 "a\nb"}}', '  a\n  b'],
    ['x:{{nindent 4 "a\nb"}}', 'x:\n    a\n    b'],
    ['[{{trim "  a  "}}]', '[a]'],
    ['{{replace "_" "-" db.user}}', 'app-user'],
    ['{{join "," "a" "b" "c"}}', 'a,b,c'],
    ['{{join ";" (fromJson "[1,2]")}}', '1;2'],
    ['{{concat db.user "@" "host"}}', 'app_user@host'],
    ['{{quote "a\\"b"}}', '"a\\"b"'],
    ['{{#if (eq db.user "app_user")}}yes{{else}}no{{/if}}', 'yes'],
    ['{{#if (ne db.user "app_user")}}yes{{else}}no{{/if}}', 'no'],
    ['{{sha256sum "abc"}}', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
    ['{{pemCertificates db.bundle}}', `${PEM_CERT}\n${PEM_CERT2}\n`],
    ['{{pemPrivateKey db.bundle}}', `${PEM_KEY}\n`],
    ['{{pemBlocks "CERTIFICATE" db.bundle}}', `${PEM_CERT}\n${PEM_CERT2}\n`],
  ];
  for (const [src, want] of cases) tt.equal(render(src), want, src);
});

t.test('helper failures are value-free and located', async (tt) => {
  let e = renderError(tt, 'line1\n  {{b64dec db.password}}');
  tt.equal(e.line, 2);
  tt.equal(e.column, 3);
  tt.match(e.message, /annotation esi\.dev\/template-app\.conf line 2, column 3: helper b64dec: input is not valid base64/);
  e = renderError(tt, '{{fromJson db.password}}');
  tt.match(e.message, /fromJson: input is not valid JSON/);
  e = renderError(tt, '{{upper db.missing}}');
  tt.match(e.message, /upper: argument is undefined/);
  e = renderError(tt, '{{pemPrivateKey db.password}}');
  tt.match(e.message, /no PRIVATE KEY block/);
  e = renderError(tt, '{{upper}}');
  tt.match(e.message, /expects 1 argument/);
});

t.test('strict mode: missing keys fail naming template, path, line and column', async (tt) => {
  const e = renderError(tt, 'a: 1\nb: {{db.pasword}}\n');
  tt.equal(e.template, 'annotation esi.dev/template-app.conf');
  tt.equal(e.line, 2);
  tt.equal(e.column, 6);
  tt.match(e.message, /^template annotation esi\.dev\/template-app\.conf line 2, column 6: "db\.pasword" is not defined$/);
  const e2 = renderError(tt, '{{nosuch.secret}}');
  tt.match(e2.message, /"nosuch\.secret" is not defined/);
});

t.test('lookups into a value do not echo it', async (tt) => {
  const e = renderError(tt, '\n{{db.password.length}}');
  tt.match(e.message, /"db\.password\.length": "db\.password" is a value, not an object/);
  tt.equal(e.line, 2);
});

t.test('syntax errors name line and column without quoting the source', async (tt) => {
  const e = renderError(tt, `ok\n${CANARY} {{#if db}}\n  {{db.user`);
  tt.equal(e.line, 3);
  tt.ok(e.column && e.column > 0);
  tt.match(e.message, /syntax error/);
  const e2 = renderError(tt, '{{#if db}}x{{/each}}');
  tt.match(e2.message, /block "\{\{\/each\}\}" does not match "if"/);
});

t.test('prototype access is blocked', async (tt) => {
  const printed: unknown[] = [];
  const saved = { log: console.log, warn: console.warn, error: console.error };
  console.log = console.warn = console.error = (...a: unknown[]) => printed.push(a);
  tt.teardown(() => Object.assign(console, saved));
  for (const src of [
    '{{constructor.constructor}}',
    '{{__proto__}}',
    '{{db.constructor}}',
    '{{db.__proto__.constructor}}',
    '{{toString}}',
    '{{#with (fromJson db.json)}}{{nested.constructor.constructor}}{{/with}}',
    '{{#each (fromJson "[\\"x\\"]")}}{{constructor.constructor}}{{/each}}',
  ]) {
    renderError(tt, src);
  }
  // lookup is strict: prototype members are not defined, like any missing key.
  renderError(tt, '{{lookup db "constructor"}}');
  renderError(tt, '{{lookup (fromJson db.json) "__proto__"}}');
  tt.equal(render('{{#with (fromJson "{\\"__proto__\\":{\\"polluted\\":1}}")}}x{{/with}}'), 'x');
  tt.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype pollution');
  Object.assign(console, saved);
  tt.same(printed, [], 'Handlebars wrote nothing to the console');
});

t.test('no environment, filesystem or console access from templates', async (tt) => {
  process.env.ESI_TEMPLATE_CANARY = CANARY;
  for (const src of ['{{env "HOME"}}', '{{process.env.ESI_TEMPLATE_CANARY}}', '{{readFile "/etc/passwd"}}', '{{log db.password}}', '{{> partial}}']) {
    renderError(tt, src);
  }
  const e = renderError(tt, '{{env "HOME"}}');
  tt.match(e.message, /unknown helper "env"/);
  delete process.env.ESI_TEMPLATE_CANARY;
});

t.test('Go templates are refused with a clear message', async (tt) => {
  for (const src of ['{{ .password }}', 'x: {{- .user -}}', '{{ $x := 1 }}', '{{ range .items }}{{ end }}', '{{ index . "a-b" }}']) {
    const e = renderError(tt, src);
    tt.match(e.message, /looks like a Go template/, src);
  }
  tt.same(detectGoTemplate('a\nb {{ .password }}'), { line: 2, column: 3 });
  tt.equal(detectGoTemplate('{{db.password}} {{./x}} {{#each db}}{{.}}{{/each}}'), undefined);
});

t.test('compiled templates are cached', async (tt) => {
  const e = new TemplateEngine(2);
  const c1 = e.compile('a', '{{db.user}}');
  tt.equal(c1.render('a', ctx), 'app_user');
  const cache = (e as unknown as { cache: Map<string, unknown> }).cache;
  const first = cache.get('{{db.user}}');
  e.render('b', '{{db.user}}', ctx);
  tt.equal(cache.get('{{db.user}}'), first, 'same compiled template reused');
  e.render('c', '1', ctx);
  e.render('d', '2', ctx);
  tt.equal(cache.size, 2, 'bounded');
});

t.test('ExternalSecret target.template (handlebars)', async (tt) => {
  const data = { username: enc('u'), password: enc(CANARY) };
  const out = applyExternalSecretTemplate(engine, { name: 'db', template: {
    data: { 'dsn': 'postgres://{{username}}:{{password}}@db/app' },
    templateFrom: [{ literal: 'a: "{{upper username}}"\nb: x' }, { target: 'Labels', literal: 'l: v' }],
  }, choice: 'handlebars' }, data);
  tt.same(Object.keys(out).sort(), ['a', 'b', 'dsn']);
  tt.equal(dec(out.dsn), `postgres://u:${CANARY}@db/app`);
  tt.equal(dec(out.a), 'U');
  const merged = applyExternalSecretTemplate(engine, { name: 'db', template: { mergePolicy: 'Merge', data: { x: '{{username}}' } }, choice: 'handlebars' }, data);
  tt.same(Object.keys(merged).sort(), ['password', 'username', 'x']);
  tt.equal(applyExternalSecretTemplate(engine, { name: 'db', template: {}, choice: 'handlebars' }, data), data, 'no template: data unchanged');
  tt.throws(
    () => applyExternalSecretTemplate(engine, { name: 'db', template: { data: { k: '{{ .password }}' } }, choice: 'handlebars' }, data),
    /template ExternalSecret db target\.template\.data\.k line 1, column 1: looks like a Go template/,
  );
  tt.throws(() => applyExternalSecretTemplate(engine, { name: 'db', template: { templateFrom: [{ configMap: { name: 'c' } }] }, choice: 'handlebars' }, data), /not supported by the agent/);
  tt.throws(() => applyExternalSecretTemplate(engine, { name: 'db', template: { data: { 'a/b': 'x' } }, choice: 'handlebars' }, data), /output key "a\/b" is not a valid key/);
});

t.test('engine selection for ExternalSecret templates', async (tt) => {
  const tpl = { data: { k: '{{password}}' } };
  tt.equal(selectTemplateEngine('db', undefined, undefined), 'none');
  tt.equal(selectTemplateEngine('db', { 'esi.dev/template-engine': 'handlebars' }, tpl), 'handlebars');
  // Without the opt-in a template is ESO's Go template (test/src/templating/go/index.test.ts).
  tt.equal(selectTemplateEngine('db', {}, { engineVersion: 'v2', data: { k: '{{ .password }}' } }), 'go');
  tt.throws(() => selectTemplateEngine('db', { 'esi.dev/template-engine': 'go' }, tpl), /must be "handlebars"/);
});

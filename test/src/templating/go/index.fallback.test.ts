// The Go-template entry point (src/templating/go/index.ts) with two engines: the TypeScript
// engine renders what it can render exactly, the WebAssembly Go engine the rest, per
// template, explicitly (a listener hears the template and the reason) and with the same
// results and messages as before (docs/decisions/0071-go-templates-in-typescript.md).
import t from 'tap';
import { goTemplateStats, onGoTemplateFallback, parseGoTemplates, renderGoTemplates } from '../../../../src/templating/go/index.js';
import { stopEngine } from '../../../../src/templating/go/runner.js';

t.teardown(stopEngine);
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const heard: [string, string][] = [];
onGoTemplateFallback((template, reason) => heard.push([template, reason]));
t.teardown(() => onGoTemplateFallback(undefined));

const render = (source: string, data: Record<string, string> = {}, timeoutMs?: number) =>
  dec(renderGoTemplates([{ name: 't', source }], Object.fromEntries(Object.entries(data).map(([k, v]) => [k, enc(v)])), timeoutMs)[0]!);

t.test('an ordinary ESO template renders in TypeScript: no fallback', async (t) => {
  const before = { ...goTemplateStats };
  heard.length = 0;
  t.equal(render('{{ .user | quote }}:{{ printf "%s:%s" .user .password | b64enc }}', { user: 'app', password: 'pw' }), '"app":YXBwOnB3');
  t.same(parseGoTemplates([{ name: 'p', source: '{{ range $k, $v := . }}{{ $k }}{{ end }}' }]), []);
  t.equal(goTemplateStats.typescript, before.typescript + 1);
  t.equal(goTemplateStats.webassembly, before.webassembly, 'the Go engine was not used');
  t.same(heard, []);
});

t.test('a function left to Go falls back for that template only, and says so', async (t) => {
  heard.length = 0;
  const out = renderGoTemplates(
    [{ name: 'yaml', source: '{{ (fromYaml .v).k }}' }, { name: 'plain', source: '{{ .v | upper }}' }],
    { v: enc('k: abc123') },
  );
  t.same(out.map(dec), ['abc123', 'K: ABC123']);
  t.same(heard, [['yaml', 'function "fromYaml" is not implemented in TypeScript (or not defined)']]);
});

t.test("errors are Go's own messages, without values", async (t) => {
  heard.length = 0;
  const before = goTemplateStats.webassembly;
  t.throws(() => render('{{ .missing }}'), { message: 'template t line 1, column 3: executing "t" at <.missing>: map has no entry for key "missing"' });
  // A missing key is worded in TypeScript (gotext-differential.test.ts), values redacted alike
  // (the column is that of `.canary_key`: Go places a field chain at its second field).
  t.throws(() => render('é\n{{ define "d" }}{{ .cfg.canary_key }}{{ end }}{{ template "d" (dict "cfg" (dict)) }}', { v: 'canary_key' }), {
    message: 'template t line 2, column 23: executing "d" at <.cfg.<redacted>>: map has no entry for key "<redacted>"',
  });
  t.equal(goTemplateStats.webassembly, before, 'the Go engine was not needed for them');
  t.same(heard, []);
  t.same(parseGoTemplates([{ name: 'bad', source: '{{ .a ' }]).map((e) => e.message), ['template bad line 1: unclosed action']);
  let message = '';
  try {
    render('{{ fail .password }}', { password: 'canary-secret-value' });
  } catch (err) {
    message = (err as Error).message;
  }
  t.match(message, /^template t line 1/);
  t.notMatch(message, 'canary', 'the value is redacted');
  t.ok(heard.every(([, reason]) => !reason.includes('canary')), 'no value in a reason');
});

t.test('bounds hold in TypeScript with the Go engine’s messages', async (t) => {
  const before = goTemplateStats.webassembly;
  t.throws(() => render('{{ range until 200000 }}xxxxxxxxxx{{ end }}'), /rendered output exceeds the size limit/);
  t.throws(() => render('{{ range 100000000000 }}{{ end }}', {}, 300), /took longer than 300 ms and was stopped/);
  t.equal(goTemplateStats.webassembly, before, 'neither needed the Go engine');
  // A value built past the allowance goes to the Go engine's sandbox, which bounds it.
  t.throws(() => render('{{ $x := list "aaaaaaaaaa" }}{{ range until 40 }}{{ $x = list $x $x }}{{ end }}{{ print $x }}', {}, 2000));
  t.equal(goTemplateStats.webassembly, before + 1);
});

t.test('ESI_GO_TEMPLATE_ENGINE=wasm sends every template to the Go engine', async (t) => {
  process.env.ESI_GO_TEMPLATE_ENGINE = 'wasm';
  t.teardown(() => delete process.env.ESI_GO_TEMPLATE_ENGINE);
  const before = goTemplateStats.webassembly;
  t.equal(render('{{ .a }}', { a: 'x' }), 'x');
  t.equal(goTemplateStats.webassembly, before + 1);
});

// The Go-template entry point (src/templating/go/index.ts) with one engine: what the
// TypeScript engine cannot render exactly as Go is refused with a message that names the
// function or the case, at parse time (admission) where the source says it, at render time
// otherwise, and never with a value (docs/decisions/0087-templating-engines.md).
import t from 'tap';
import { parseGoTemplates, renderGoTemplates } from '../../../../src/templating/go/index.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const CANARY = 'canary-secret-value';

const render = (source: string, data: Record<string, string | Uint8Array> = {}, timeoutMs?: number) =>
  dec(renderGoTemplates([{ name: 't', source }], Object.fromEntries(Object.entries(data).map(([k, v]) => [k, typeof v === 'string' ? enc(v) : v])), timeoutMs)[0]!);
const parseErrors = (source: string) => parseGoTemplates([{ name: 'p', source }]).map((e) => e.message);

t.test('a Sprig or ESO function ESI does not render is refused at parse time, by name and line', async (t) => {
  t.same(parseErrors('line one\n{{ .p12 | certSANs }}'), ['template p line 2: not supported by ESI: function "certSANs" is not supported by ESI (docs/templates.md lists what ESI renders)']);
  for (const f of ['fromYaml', 'certSANs', 'bcrypt', 'now', 'randAlphaNum', 'genPrivateKey', 'merge', 'semver']) {
    t.match(parseErrors(`{{ ${f} }}`)[0], `function "${f}" is not supported by ESI`, f);
  }
  t.throws(() => render('{{ (fromYaml .v).k }}', { v: 'k: v' }), /function "fromYaml" is not supported by ESI/, 'rendering refuses it too');
  t.same(parseErrors('{{ nosuchfunc }}'), ['template p line 1: function "nosuchfunc" not defined'], 'a name Go does not know is "not defined", as in Go');
  t.same(parseErrors('{{ env "HOME" }}'), ['template p line 1: function "env" not defined'], 'removed by ESO for safety: not defined');
});

t.test('a case the engine cannot render exactly is refused at render time, naming the case and no value', async (t) => {
  const refused = (source: string, data: Record<string, string | Uint8Array>) => {
    try {
      render(source, data);
    } catch (err) {
      return (err as Error).message;
    }
    return 'rendered';
  };
  t.equal(refused('{{ .v | upper }}', { v: `é-${CANARY}` }), 'template t: not supported by ESI: upper of non-ASCII text (docs/templates.md lists what ESI renders)');
  t.equal(refused('{{ .v | upper }}', { v: new Uint8Array([0xff, 0xfe, 0x41]) }),
    'template t: not supported by ESI: a data value that is not UTF-8, other than printed as it is or given to b64enc, sha1sum or sha256sum (docs/templates.md lists what ESI renders)');
  t.equal(render('{{ .v }}|{{ .v | b64enc }}', { v: new Uint8Array([0xff, 0x41]) }), '\ufffdA|/0E=', 'bytes print as they are and reach b64enc');
  t.equal(refused('{{ $x := list "aaaaaaaaaa" }}{{ range until 40 }}{{ $x = list $x $x }}{{ end }}{{ print $x }}', {}), 'template t: the render builds more than 4194304 characters or items of values (the limit of one render)');
  t.notMatch(refused(`{{ .v | toYaml }}`, { v: `a: ${CANARY}` }), CANARY);
});

t.test('syntax errors and execution failures are errors of the template, in the engine’s words', async (t) => {
  t.same(parseErrors('{{ .a '), ['template p line 1: unclosed action']);
  t.same(parseErrors('x\ny\n{{ if .a }}'), ['template p line 3: unexpected EOF']);
  t.same(parseErrors('{{ $x }}'), ['template p line 1: undefined variable']);
  t.throws(() => render('{{ index (list 1 2) 5 }}'), { message: 'template t: executing: index out of range' });
  t.throws(() => render('{{ .missing }}'), { message: 'template t line 1, column 3: executing "t" at <.missing>: map has no entry for key "missing"' });
  let message = '';
  try {
    render('{{ .p | int | add 1 | printf "%s" | b64enc | mul 2 }}', { p: CANARY });
  } catch (err) {
    message = (err as Error).message;
  }
  t.match(message, /^template t/);
  t.notMatch(message, CANARY, 'no value in the message');
});

t.test('bounds hold with their own messages', async (t) => {
  t.throws(() => render('{{ range until 200000 }}xxxxxxxxxx{{ end }}'), /rendered output exceeds the size limit/);
  t.throws(() => render('{{ range 100000000000 }}{{ end }}', {}, 300), /took longer than 300 ms and was stopped/);
  t.throws(() => render('{{ range until 2000000000 }}{{ end }}'), /until: at most 1000000 items/);
});

// Values stay out of template errors in the encodings a template applies before failing
//: the real Go engine renders `fail` of the base64, URL and JSON forms of a
// canary, and the TemplateError (what reaches status, Events and logs) carries none of them.
import t from 'tap';
import { renderGoTemplates } from '../../../src/templating/go/index.js';
import { redactValues } from '../../../src/templating/redact.js';

const CANARY = 'Canary value/7+9=ok "quoted" ünïcode';
const enc = new TextEncoder();

const formsOf = (v: string) => [
  v, Buffer.from(v).toString('base64'), Buffer.from(v).toString('base64url'), Buffer.from(v).toString('hex'),
  encodeURIComponent(v), JSON.stringify(v).slice(1, -1), v.toUpperCase(),
];

t.test('redactValues removes every common form, longest first', async (t) => {
  for (const f of formsOf(CANARY)) {
    const out = redactValues(`before ${f} after`, [CANARY]);
    t.equal(out, 'before <redacted> after', `form ${f.slice(0, 24)}`);
  }
  t.equal(redactValues('ab and abc', ['ab']), 'ab and abc', 'values under 3 characters are left alone');
  t.equal(redactValues('x secret-long y', [enc.encode('secret-long')]), 'x <redacted> y', 'bytes are values too');
});

t.test('the Go engine\'s errors carry no form of the value', async (t) => {
  const templates = {
    b64: '{{ fail (.password | b64enc) }}',
    url: '{{ fail (.password | urlquery) }}',
    json: '{{ fail (.password | toJson) }}',
    upper: '{{ fail (.password | upper) }}',
    plain: '{{ fail .password }}',
    quoted: '{{ fail (printf "%q" .password) }}',
  };
  for (const [name, source] of Object.entries(templates)) {
    let message = '';
    try {
      renderGoTemplates([{ name: `target.template.data.${name}`, source }], { password: enc.encode(CANARY) });
    } catch (err) {
      message = (err as Error).message;
    }
    t.match(message, new RegExp(`target\\.template\\.data\\.${name}.*error calling fail`), `${name}: the engine's error, naming the template`);
    for (const f of formsOf(CANARY)) t.notOk(message.includes(f), `${name}: no ${f.slice(0, 16)}… in "${message.slice(0, 80)}"`);
  }
});

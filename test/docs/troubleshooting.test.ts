// docs/troubleshooting.md cannot drift from the product: every message it quotes as ESI's (a
// line of a ```message block, `<…>` standing for what varies) is found in the product's
// sources, each literal part of it in one and the same file, so a reworded or removed
// message fails here until the page follows. No cluster needed.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
const PAGE = join(ROOT, 'docs', 'troubleshooting.md');
/** Product code only: a test or a doc quoting the message must not make it count. */
const PRODUCT = ['src', 'webhook', 'injector', 'certs'];

function sources(dir: string, out: { path: string; text: string }[] = []): { path: string; text: string }[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) sources(p, out);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.generated.ts')) out.push({ path: relative(ROOT, p), text: readFileSync(p, 'utf8') });
  }
  return out;
}

/** The literal parts of a quoted message: split at the placeholders, the punctuation and
 *  quotes that join a part to a placeholder trimmed (the code spells those parts as
 *  `"${name}"`), parts too short to mean anything dropped. */
export function literalParts(message: string): string[] {
  return message.split(/<[^<>]+>/)
    .map((part) => part.replace(/^[\s"':;,.()/=—-]+|[\s"':;,.()/=—-]+$/g, ''))
    .filter((part) => part.length >= 6);
}

const page = readFileSync(PAGE, 'utf8');
const messages = [...page.matchAll(/^```message\n([\s\S]*?)^```$/gm)].flatMap((m) => m[1]!.split('\n').filter((l) => l.trim()));
const code = PRODUCT.flatMap((d) => sources(join(ROOT, d)));

t.test('the page covers the first failures, each with its fix', async (t) => {
  const sections = [...page.matchAll(/^## \d+\. (.+)$/gm)].map((m) => m[1]!);
  t.ok(sections.length >= 10, `${sections.length} numbered sections`);
  for (const reason of ['AccessDenied', 'StoreNotFound', 'TemplateError', 'SecretConflict']) t.match(page, reason, `names the ${reason} status reason`);
  t.equal(page.split(/^## /m).slice(1).filter((s) => !/Fix:/.test(s)).length, 0, 'every section says the fix');
  t.ok(messages.length >= 20, `${messages.length} product messages quoted`);
});

t.test('every quoted message is one the product writes', async (t) => {
  for (const message of messages) {
    const parts = literalParts(message);
    t.ok(parts.length > 0, `"${message}" has text to check`);
    const file = code.find((f) => parts.every((p) => f.text.includes(p)));
    t.ok(file, `"${message}" is written by ${file?.path ?? 'no product file'}${file ? '' : `; missing: ${JSON.stringify(parts.filter((p) => !code.some((f) => f.text.includes(p))))}`}`);
  }
});

t.test('the check itself: a reworded message is caught', async (t) => {
  const parts = literalParts('<store> not found; create it or fix <field>');
  t.same(parts, ['not found; create it or fix']);
  t.ok(code.some((f) => parts.every((p) => f.text.includes(p))));
  const reworded = literalParts('<store> is missing; create it or fix <field>');
  t.notOk(code.some((f) => reworded.every((p) => f.text.includes(p))), 'a message ESI does not write finds no file');
});

t.test('README and the install guide link the page', async (t) => {
  for (const doc of ['README.md', 'docs/install.md']) t.match(readFileSync(join(ROOT, doc), 'utf8'), /\]\((\.\/)?(docs\/)?troubleshooting\.md[#)]/, doc);
});

// What a subcommand of the built bundle loads at start: the entry and every chunk the
// subcommand's chunk imports statically (import() is a chunk loaded when called). Used by the
// bundle tests in test/scripts/ (docs/decisions/0046-bundled-entry.md). Reads dist/bundle after `npm run build`.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const BUNDLE = join(import.meta.dirname, '..', '..', 'dist', 'bundle');

/** File → source of the chunks Node loads from bundle `dir` for the command whose chunk holds `marker`. */
export function startClosure(dir: string, marker: string): Map<string, string> {
  const chunks = join(dir, 'chunks');
  const command = readdirSync(chunks).find((f) => f.endsWith('.mjs') && readFileSync(join(chunks, f), 'utf8').includes(marker));
  if (!command) throw new Error(`no chunk of ${dir} holds ${JSON.stringify(marker)}`);
  const out = new Map<string, string>();
  const visit = (file: string) => {
    if (out.has(file)) return;
    const text = readFileSync(file, 'utf8');
    out.set(file, text);
    // Minified static imports: `from"./x.mjs"` / `import"./x.mjs"`.
    for (const m of text.matchAll(/(?:from|import)\s*"(\.\.?\/[^"]+\.mjs)"/g)) visit(join(file, '..', m[1]!));
  };
  visit(join(dir, 'esi.mjs'));
  visit(join(chunks, command));
  return out;
}

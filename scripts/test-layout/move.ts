// Moves the test tree to the layout docs/testing.md describes, mechanically: every file named in
// moves.tsv (beside this script) is `git mv`ed, and every path that pointed at a moved file is
// rewritten — relative imports, `new URL('…', import.meta.url)` and `join(import.meta.dirname,
// '…')` in TypeScript, and repository paths (`test/…`) named in code, docs and config. The
// CHANGELOG (history) and docs/decisions/ are left as they are unless named with --text-only.
//
//   npx tsx scripts/test-layout/move.ts                     # do the move
//   npx tsx scripts/test-layout/move.ts --text-only a.md …  # rewrite the paths named in these files
//   npx tsx scripts/test-layout/move.ts --where <old path>  # where the layout puts an old path
//   npx tsx scripts/test-layout/move.ts --map other.tsv …   # the same with another table
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
const SELF = 'scripts/test-layout/';
const LEFT_ALONE = /^(CHANGELOG\.md|docs\/decisions\/|scripts\/test-layout\/|package-lock\.json)/;
const TEXT = /(\.(ts|js|mjs|md|sh|ya?ml|json|env|txt)|^Dockerfile\.[a-z]+|^\.ci\/run)$/;

function git(...args: string[]): string {
  return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
}

/** The rows of moves.tsv: files first-class, folders (ending in /) for what the files leave. */
function rules(table: string): { files: Map<string, string>; folders: [string, string][] } {
  const files = new Map<string, string>();
  const folders: [string, string][] = [];
  for (const line of readFileSync(table, 'utf8').split('\n')) {
    if (!line.trim() || line.startsWith('#')) continue;
    const [from, to] = line.split('\t');
    if (!from || !to) throw new Error(`moves.tsv: not "old<TAB>new": ${line}`);
    if (from.endsWith('/')) folders.push([from, to]);
    else files.set(from, to);
  }
  folders.sort((a, b) => b[0].length - a[0].length);
  return { files, folders };
}

const ARGS = process.argv.slice(2);
const MAP = ARGS[0] === '--map' ? ARGS.splice(0, 2)[1]! : join(import.meta.dirname, 'moves.tsv');
const RULES = rules(MAP);

/** Where the layout puts a repository path (a file, or a folder's file), or the path itself. */
export function moved(path: string): string {
  const exact = RULES.files.get(path);
  if (exact) return exact;
  for (const [from, to] of RULES.folders) if (path.startsWith(from)) return to + path.slice(from.length);
  return path;
}

/** A relative reference from `oldFile`, re-aimed from `newFile` at where its target went. */
function reaim(ref: string, oldFile: string, newFile: string): string {
  const target = posix.normalize(posix.join(posix.dirname(oldFile), ref));
  const asTs = target.replace(/\.js$/, '.ts');
  const movedTs = moved(asTs);
  const to = movedTs !== asTs ? movedTs.replace(/\.ts$/, target.endsWith('.js') ? '.js' : '.ts') : moved(target);
  let out = posix.relative(posix.dirname(newFile), to) || '.';
  if (ref.endsWith('/') && !out.endsWith('/')) out += '/';
  return out.startsWith('.') ? out : `./${out}`;
}

function rewriteTs(text: string, oldFile: string, newFile: string): string {
  const re = (ref: string): string => reaim(ref, oldFile, newFile);
  return text
    .replace(/(?<!['"`][^\n]*)((?:from|import)\s*\(?\s*)(['"])(\.\.?\/[^'"]*)\2/g, (_m, pre: string, q: string, ref: string) => `${pre}${q}${re(ref)}${q}`)
    .replace(/new URL\((['"])(\.[^'"]*)\1(,\s*import\.meta\.url\))/g, (_m, q: string, ref: string, post: string) => `new URL(${q}${re(ref)}${q}${post}`)
    .replace(/import\.meta\.dirname((?:\s*,\s*'[^'$`]*')+)/g, (m, segs: string) => {
      const parts = [...segs.matchAll(/'([^']*)'/g)].map((s) => s[1]!);
      const ref = posix.join(...parts);
      if (!ref.startsWith('..') && !existsSync(join(ROOT, posix.dirname(oldFile), ref))) return m;
      const out = re(ref.startsWith('.') ? ref : `./${ref}`).replace(/^\.\//, '');
      if (out === '.') return 'import.meta.dirname';
      const split = parts.length > 1 ? out.split('/') : [out];
      return `import.meta.dirname, ${split.map((p) => `'${p}'`).join(', ')}`;
    });
}

/** Repository paths (`test/…`) named as words: moved files and folders, and their `.js` import names. */
function rewriteNames(text: string): string {
  return text.replace(/(?<![\w./-])test\/[\w./-]*[\w/]/g, (word) => {
    const js = word.endsWith('.js') ? moved(word.replace(/\.js$/, '.ts')) : undefined;
    if (js && js !== word.replace(/\.js$/, '.ts')) return js.replace(/\.ts$/, '.js');
    return moved(word);
  });
}

function main(): void {
  const args = ARGS;
  if (args[0] === '--where') {
    for (const p of args.slice(1)) console.log(`${p}\t${moved(p)}`);
    return;
  }
  const tracked = git('ls-files').split('\n').filter(Boolean);
  const moves = tracked.map((f) => [f, moved(f)] as [string, string]).filter(([f, to]) => f !== to);
  if (args[0] === '--text-only') {
    for (const f of args.slice(1)) writeFileSync(f, rewriteNames(readFileSync(f, 'utf8')));
    return;
  }
  const movedTo = new Map(moves);
  const contents = new Map<string, string>();
  for (const f of tracked) {
    if (!existsSync(join(ROOT, f)) || f.startsWith(SELF)) continue;
    if (!TEXT.test(f) && !TEXT.test(posix.basename(f))) continue;
    const text = readFileSync(join(ROOT, f), 'utf8');
    const to = movedTo.get(f) ?? f;
    let out = f.endsWith('.ts') ? rewriteTs(text, f, to) : text;
    if (!LEFT_ALONE.test(f)) out = rewriteNames(out);
    if (out !== text || to !== f) contents.set(to, out);
  }
  // Two steps so that a file may take the path another one leaves.
  for (const [from] of moves) git('mv', from, `${from}.moving`);
  for (const [from, to] of moves) {
    mkdirSync(dirname(join(ROOT, to)), { recursive: true });
    git('mv', `${from}.moving`, to);
  }
  for (const [file, text] of contents) writeFileSync(join(ROOT, file), text);
  console.log(`${moves.length} files moved, ${contents.size} files written (${relative(ROOT, process.cwd()) || '.'})`);
}

main();

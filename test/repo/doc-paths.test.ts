// Every repository path that the docs (every *.md), the README and the code comments name
// must exist: a pointer to a moved or deleted file is how a newcomer gets
// lost. No cluster needed. What counts as a path, pragmatically:
// - a Markdown link target without a scheme, resolved from the linking file's folder;
// - a word that starts with a top-level folder of the repository (`src/…`, `docs/…`, also
//   behind `./` or `../`) and has a file extension, ends with `/`, has three segments or
//   stands in backticks (prose such as "the webhook/agent contract" does not count),
//   resolved from the root or, failing that, from the naming file; an ADR may be named by
//   its number (`docs/decisions/0015`), a TypeScript module by its `.js` import name;
// - a word with a folder and a file extension (`vault/spec.ts`), which must be the end of
//   some path in the repository or resolve from the naming file;
// - an upper-case top-level document name (`BENCHMARKS.md`).
// Globs, placeholders (`<provider>/…`, `$VAR/…`), home and absolute paths, URLs, domains
// (`esi.dev/…`, `k8s.io/…`), paths outside the repository (`../shared/…`) and build outputs
// (dist/, node_modules/) are not repository paths and are passed over; so is CHANGELOG.md,
// which is history (it names files as they were when each change landed).
import t from 'tap';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
/** Folders whose code comments are read (the brief's list of code folders). */
const CODE_DIRS = ['src', 'webhook', 'injector', 'certs', 'test', 'bench', 'scripts', 'bin'];
const CODE_FILE = /\.(ts|js|go|sh)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', '.esi-run', '.tap', 'coverage']);
const EXTENSIONS = /\.(ts|js|md|sh|ya?ml|json|go|proto|env|txt|tpl|mod)$/;

/** Paths named on purpose although they do not exist, each with the reason. */
const NOT_FILES = new Map<string, string>([
  ['bench/admission/.profiles/', 'written by `npm run bench:admission -- --cpu-prof`'],
]);
/** History: a change log names the files as they were when each change landed. */
const HISTORY = new Set(['CHANGELOG.md']);

function walk(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP_DIRS.has(entry.name)) continue;
    const p = join(dir, entry.name);
    if (entry.isDirectory()) walk(p, out);
    else if (entry.isFile()) out.push(relative(ROOT, p));
  }
  return out;
}

const FILES = walk(ROOT);
const TOP = new Set(readdirSync(ROOT, { withFileTypes: true }).filter((e) => e.isDirectory() && !e.name.startsWith('.') && !SKIP_DIRS.has(e.name)).map((e) => e.name));

/** The comment text of a code file: `//` and block comments, `#` comments of shell scripts. */
function comments(text: string, shell: boolean): string {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const s = line.trim();
    if (shell) {
      if (s.startsWith('#')) out.push(s);
      else if (line.includes(' # ')) out.push(line.slice(line.indexOf(' # ')).trim());
      continue;
    }
    if (s.startsWith('//') || s.startsWith('*') || s.startsWith('/*')) out.push(s);
    else if (/\s\/\/\s/.test(line)) out.push(line.slice(line.search(/\s\/\/\s/)).trim());
  }
  return out.join('\n');
}

/** A named path: what the text says and the file that says it. */
interface Named { path: string; from: string; link: boolean }

const LINK = /\]\(([^)\s]+)\)/g;
const WORD = /[\w./-]+/g;

/** The paths a text names (see the header for what counts). */
function namedPaths(text: string, from: string): Named[] {
  const out: Named[] = [];
  for (const m of text.matchAll(LINK)) {
    const target = m[1]!.split('#')[0]!;
    if (!target || /^[a-z][\w+.-]*:/i.test(target)) continue;
    out.push({ path: target, from, link: true });
  }
  for (const m of text.matchAll(WORD)) {
    const before = text[m.index - 1] ?? ' ';
    const after = text[m.index + m[0].length] ?? ' ';
    if ('/~$<>{*@:%=\\'.includes(before) || '*<{$@\\'.includes(after)) continue;
    if (before === '(' && text[m.index - 2] === ']') continue;
    const word = m[0].replace(/[.,:;-]+$/, '');
    const quoted = before === '`' && text[m.index + word.length] === '`';
    if (isPathLike(word, quoted)) out.push({ path: word, from, link: false });
  }
  return out;
}

function isPathLike(word: string, quoted: boolean): boolean {
  if (word.startsWith('/') || /\.\.\.|\/\//.test(word)) return false;
  const bare = word.replace(/^(\.\.?\/)+/, '');
  const first = bare.split('/')[0]!;
  if (first === 'dist' || first === 'node_modules' || first.includes('.')) return false;
  if (TOP.has(first) && bare.includes('/')) {
    return quoted || EXTENSIONS.test(bare) || bare.endsWith('/') || bare.split('/').length >= 3;
  }
  if (/^[A-Z][A-Z_]+\.md$/.test(bare)) return true;
  return bare.includes('/') && EXTENSIONS.test(bare);
}

/** An ADR named by its number, or a TypeScript module by its ESM import name. */
function aliases(path: string): string[] {
  const adr = /^(.*docs\/decisions\/|.*decisions\/)(\d{4})$/.exec(path);
  if (adr) {
    const dir = join(ROOT, 'docs', 'decisions');
    return readdirSync(dir).filter((f) => f.startsWith(`${adr[2]}-`)).map((f) => `${adr[1]}${f}`);
  }
  return path.endsWith('.js') ? [path, path.replace(/\.js$/, '.ts')] : [path];
}

/** Whether a named path exists: from the root, from the naming file's folder, or as the end of a repository path. */
function exists(n: Named): boolean {
  return aliases(n.path.replace(/\/$/, '')).some((p) => existsAs(p, n));
}

function existsAs(clean: string, n: Named): boolean {
  const fromFile = normalize(join(dirname(n.from), clean));
  // Outside the repository (the sibling ../shared of a development machine): not ours.
  if (fromFile.startsWith('..') || (!n.link && normalize(clean).startsWith('..'))) return true;
  if (n.link) return existsSync(join(ROOT, clean.startsWith('/') ? clean.slice(1) : fromFile));
  if (existsSync(join(ROOT, clean)) || existsSync(join(ROOT, fromFile))) return true;
  const bare = clean.replace(/^(\.\.?\/)+/, '');
  const first = bare.split('/')[0]!;
  if (TOP.has(first) || /^[A-Z][A-Z_]+\.md$/.test(bare)) return false;
  return FILES.some((f) => f.endsWith(`/${bare}`)) || FILES.some((f) => f.includes(`/${bare}/`));
}

function sources(): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  for (const file of FILES) {
    const first = file.split('/')[0]!;
    if (HISTORY.has(file)) continue;
    if (file.endsWith('.md')) out.push({ file, text: readFileSync(join(ROOT, file), 'utf8') });
    else if (CODE_DIRS.includes(first) && CODE_FILE.test(file) && statSync(join(ROOT, file)).size < 1_000_000) {
      out.push({ file, text: comments(readFileSync(join(ROOT, file), 'utf8'), file.endsWith('.sh')) });
    }
  }
  return out;
}

t.test('what counts as a named path, and a missing one is found', async (t) => {
  const text = 'See `src/nowhere.ts`, [x](../nowhere.md), docs/decisions/0001, `esi.dev/inject`, the webhook/agent contract, <dir>/..data, https://x.io/a/b.ts, `src/providers/*.ts`.';
  const named = namedPaths(text, 'docs/x.md');
  t.same(named.map((n) => n.path).sort(), ['../nowhere.md', 'docs/decisions/0001', 'src/nowhere.ts']);
  t.same(named.filter((n) => !exists(n)).map((n) => n.path).sort(), ['../nowhere.md', 'src/nowhere.ts'], 'missing files are reported');
  const code = 'const a = 1; // see src/duration.ts\nconst u = "http://x/y.ts";\n/** webhook/mutate.ts */';
  t.equal(comments(code, false), '// see src/duration.ts\n/** webhook/mutate.ts */', 'comments only, not strings');
  t.equal(comments('x=1 # see bench/README.md\necho "a/b.sh"', true), '# see bench/README.md');
});

t.test('every path named in docs, README and code comments exists', async (t) => {
  const missing: string[] = [];
  let checked = 0;
  for (const { file, text } of sources()) {
    for (const n of namedPaths(text, file)) {
      checked++;
      if (NOT_FILES.has(n.path) || exists(n)) continue;
      missing.push(`${file}: ${n.path}`);
    }
  }
  t.ok(checked > 500, `${checked} named paths checked`);
  t.same([...new Set(missing)], [], 'named paths that do not exist (fix the pointer, or list it in NOT_FILES with the reason)');
});

t.test('docs/decisions/README.md lists every record once, and no record is partly superseded', async (t) => {
  const dir = join(ROOT, 'docs', 'decisions');
  const index = readFileSync(join(dir, 'README.md'), 'utf8');
  const records = readdirSync(dir).filter((f) => /^\d{4}-.*\.md$/.test(f)).sort();
  const numbers = records.map((f) => Number(f.slice(0, 4)));
  // The index is in reading order, not number order: compare as sets, each row once.
  const rows = [...index.matchAll(/^\| \[(\d{4})\]\((\d{4}-[\w-]+\.md)\)/gm)].map((m) => Number(m[1]));
  t.same([...rows].sort((a, b) => a - b), numbers, 'one row per record');
  t.equal(new Set(rows).size, rows.length, 'no record listed twice');
  t.match(index, /^Numbers are never reused/m, 'says that numbers are never reused');
  t.match(index, new RegExp(`the next record is ${String(numbers.at(-1)! + 1).padStart(4, '0')}`));
  // A change to part of a decision rewrites the record that holds it (git history keeps the
  // old text), so a reader never has to combine two records to know what holds.
  const partly = records.filter((f) => /^\*\*Status:\*\*.*(in part|superseded)/im.test(readFileSync(join(dir, f), 'utf8')));
  t.same(partly, [], 'records whose status says they are (partly) superseded');
});

// A pointer at a numbered issue of a tracker this repository does not hold tells a reader
// nothing: the reason is written where it applies, or in a docs/ page or decision record.
t.test('no file cites a numbered issue of an outside tracker', async (t) => {
  const cite = new RegExp('\\bissues? #?' + '\\d+', 'i');
  const hits: string[] = [];
  for (const file of FILES) {
    if (!/\.(ts|js|go|sh|md|ya?ml|tpl|txt)$/.test(file)) continue;
    const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
    lines.forEach((line, i) => { if (cite.test(line)) hits.push(`${file}:${i + 1}: ${line.trim().slice(0, 100)}`); });
  }
  t.same(hits, [], 'say the reason instead of citing an issue number');
});

// A document that names a constant (`UPPER_SNAKE`) or a function (`name()`) points a reader at
// the rule. If the code defines it but nothing else uses it, the rule lives elsewhere and the
// pointer misleads; if nothing in the code even mentions it, the pointer leads nowhere (a
// renamed or removed constant). Names from outside the repository (environment variables of
// Node or an SDK, POSIX flags) are listed in OUTSIDE_NAMES with where they come from.
const OUTSIDE_NAMES = new Map<string, string>([
  ['AWS_USE_DUALSTACK_ENDPOINT', 'an AWS SDK environment variable'],
  ['AWS_USE_FIPS_ENDPOINT', 'an AWS SDK environment variable'],
  ['NODE_COMPILE_CACHE', "a Node.js environment variable"],
  ['NODE_EXTRA_CA_CERTS', 'a Node.js environment variable'],
  ['O_EXCL', 'a POSIX open(2) flag'],
]);

/** The code names of a Markdown text: `UPPER_SNAKE` and `name()` in backticks. */
function codeNames(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/`([A-Za-z_][A-Za-z0-9_]*)(\(\))?`/g)) {
    const [, name, call] = m as unknown as [string, string, string | undefined];
    if (/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/.test(name) || (call && /^[a-z][A-Za-z0-9]+$/.test(name))) out.push(name);
  }
  return out;
}

/** Why a name a document gives does not point at a rule of `code`, or undefined. */
function namePointerProblem(name: string, code: string): string | undefined {
  const uses = (code.match(new RegExp(`\\b${name}\\b`, 'g')) ?? []).length;
  if (new RegExp(`(const|let|function|class|func)\\s+${name}\\b`).test(code)) return uses < 2 ? 'defined, used nowhere' : undefined;
  if (uses === 0 && !OUTSIDE_NAMES.has(name)) return 'named nowhere in the code';
  return undefined;
}

t.test('what counts as a pointer at a rule of the code, and a dead one is found', async (t) => {
  const code = 'export const USED_LIMIT = 1;\nconst n = USED_LIMIT + 1;\nexport const LONELY_LIMIT = 2;\nfunction helper() {}\nhelper();\nprocess.env.ESI_AGENT_CONFIG;';
  t.same(codeNames('`USED_LIMIT`, `helper()`, `ESI_AGENT_CONFIG`, `MANIFEST_TARGETS`, `gone()`, `plain`, `Mixed_Case`'),
    ['USED_LIMIT', 'helper', 'ESI_AGENT_CONFIG', 'MANIFEST_TARGETS', 'gone']);
  t.equal(namePointerProblem('USED_LIMIT', code), undefined);
  t.equal(namePointerProblem('helper', code), undefined);
  t.equal(namePointerProblem('ESI_AGENT_CONFIG', code), undefined, 'read by the code, not defined: still a pointer at it');
  t.equal(namePointerProblem('LONELY_LIMIT', code), 'defined, used nowhere');
  t.equal(namePointerProblem('MANIFEST_TARGETS', code), 'named nowhere in the code');
  t.equal(namePointerProblem('gone', code), 'named nowhere in the code');
  t.equal(namePointerProblem('O_EXCL', code), undefined, 'an outside name');
});

t.test('every constant or function a document names is one the code uses', async (t) => {
  const codeFiles = FILES.filter((f) => (CODE_DIRS.some((d) => f.startsWith(`${d}/`)) || !f.includes('/')) && CODE_FILE.test(f));
  const code = codeFiles.map((f) => readFileSync(join(ROOT, f), 'utf8')).join('\n');
  const problems: string[] = [];
  let named = 0;
  for (const file of FILES.filter((f) => f.endsWith('.md'))) {
    for (const name of codeNames(readFileSync(join(ROOT, file), 'utf8'))) {
      named++;
      const problem = namePointerProblem(name, code);
      if (problem) problems.push(`${file}: ${name} (${problem})`);
    }
  }
  t.ok(named > 10, `${named} names of code checked`);
  t.same([...new Set(problems)], [], 'named in a document, but the code does not use it (fix the pointer, or list an outside name in OUTSIDE_NAMES)');
});

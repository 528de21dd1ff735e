// Differential test of the TypeScript engine's regular-expression functions and `slice`
// (src/templating/gotext/sprig-regex.ts) against the native Go engine, with the
// comparison of gotext-oracle.ts: seeded templates over patterns (ordinary, empty-matching,
// anchored, named groups, Unicode classes, case folding, invalid syntax, backtracking
// shapes), subjects (ASCII, accents, astral characters, lines) and replacements ($ forms).
// Then the bounds: patterns and searches past the engine's limits decline (the Go engine,
// in its sandbox, takes them) in bounded time.
import t from 'tap';
import { OutputTooLarge, renderGoText, Unsupported } from '../../../../src/templating/gotext/index.js';
import { b64, prng, type CorpusRequest } from '../../../support/templating/go-corpus.js';
import { compare, topReasons } from '../../../support/templating/gotext-oracle.js';

const PATTERNS = [
  '[0-9]+', '^[a-z]', 'a*', '', 'x*', '\\b\\w+\\b', '(\\w+)@(\\w+)', '(?P<user>[^:@]+):(?P<pw>[^@]*)', '(?<host>[a-z.]+):(\\d+)',
  '^', '$', '(?m)^\\w', '(?m)$', '(?s).+', '.+', '(?i)HELLO', '(?i)é', '(?i)k', '\\pL+', '\\p{Greek}', '\\PL', '[[:alpha:]]+', '[^a-z]',
  '.', '..', 'é', '\\S+', '\\s*', ',', ',?', '(a|ab)(c|bcd)(d*)', '(a+)+b', '(?U)a+', 'a{2,3}', '\\Q.*\\E', '(', '[z-a]', 'a**',
  'x{1001}', '(?P<n>a)(?P<n>b)', '\\C', '(?<=a)b', '\\1', 'a{2}{3}', '☃', '\\x{2603}', '[\\x{10000}-\\x{10FFFF}]', '\\z', '\\A',
  '(a)|b', '(?:)', '|', 'a|', '\\d{1,3}(?:\\.\\d{1,3}){3}', '(?m)^-----BEGIN [A-Z ]+-----$', '(l+)(i)?', 'o\\b', '\\B', '[😀-😂]',
  '(?i)[k-s]+', '\\W+', '[^\\n]*\\n?', '(?P<é>a)', '(?P<01>a)', 'a{,3}', '(?x) a', '\\pN', '[[:^space:]]+', '(?-s:.)+',
  '(?P<>a)', '(?P<a', '[[:foo:]]', '\\8', 'x{2,1}', '(?z)', '\\pX', '\\p{Foo}', 'a{1000}', '(?i)(?-i)a', '[a-\\d]', '\\Q', '(?P=n)',
  '(?#c)', '\\X', '\\e', '\\v', '\\cA', '\\0', '\\o{12}', '[]a]', '[^]a]', '*a', 'a{1,1001}', 'x{0}', '(?:a{0}){1000}', '\\x41',
  '\\x{110000}', '[\\d-z]', '(?i:K)', '(?U)(a+)(a*)', '((((a))))', '(?:(?:(?:a{10}){10}){10})', '(?s:.){2}\\z', '\\pL\\pM*', '[\\p{Lu}]',
];
const SUBJECTS = [
  'hello world', 'héllo wörld ☃', '42', '', 'aaa', 'baaac', '😀a😀b', 'ab\nAB\ncd\n', 'user:pw@host:5432', '1.2.3.4 and 10.0.0.1',
  'Kelvin K k', 'ſtraße', ',,,', 'x,y,,z,', 'a,b,c,,d', 'db_1-table', 'xxxxxxxxxxxxxxxxxxxxxxxxy', 'abcd abcbcd',
  '-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n', 'Ωμέγα 123', '  padded  ',
];
const REPLS = ['$1', '${1}x', '$1x', '$01', '$$', '$', '${', '${user}', '$user-$pw', '$2$1', 'é$', '$é', '${9}', '[$0]', '$100000000', '$1000000000', '\\1', '${x', '${host}:$2', 'X', ''];
const NS = ['-1', '0', '1', '2', '5', '100'];
const LISTS = ['(list 1 2 3 4)', '(splitList "," .k1)', '(list)', '.k1', 'nil', '(regexFindAll "[a-z]" .k1 -1)', '.', '(list "a" (list 1 2) (dict "k" 1))'];
const INDICES = ['', '1', '1 3', '0 0', '3 1', '-1', '"1"', '1.5', 'nil', '10', '0 10', '0 4', '2 2', '"x"'];

const q = (s: string) => JSON.stringify(s);

/** Seeded templates using the regular-expression functions and `slice`. */
function regexCorpus(count: number, seed: number): CorpusRequest[] {
  const rnd = prng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const pat = () => (rnd() < 0.1 ? '.k2' : q(pick(PATTERNS)));
  const subject = () => pick(['.k1', '.k1', '.k2', '(index . "k-3")']);
  const must = () => (rnd() < 0.15 ? 'mustR' : 'r');
  const SHAPES: (() => string)[] = [
    () => `{{ ${must()}egexMatch ${pat()} ${subject()} }}`,
    () => `{{ ${must()}egexFind ${pat()} ${subject()} }}`,
    () => `{{ ${subject()} | ${must()}egexFind ${pat()} | quote }}`,
    () => `{{ ${must()}egexFindAll ${pat()} ${subject()} ${pick(NS)} }}`,
    () => `{{ ${must()}egexFindAll ${pat()} ${subject()} ${pick(NS)} | toJson }}`,
    () => `{{ range $i, $m := regexFindAll ${pat()} ${subject()} ${pick(NS)} }}[{{ $i }}:{{ $m }}]{{ else }}none{{ end }}`,
    () => `{{ ${must()}egexReplaceAll ${pat()} ${subject()} ${q(pick(REPLS))} }}`,
    () => `{{ regexReplaceAll ${pat()} ${subject()} .k2 }}`,
    () => `{{ ${must()}egexReplaceAllLiteral ${pat()} ${subject()} ${q(pick(REPLS))} }}`,
    () => `{{ ${must()}egexSplit ${pat()} ${subject()} ${pick(NS)} }}`,
    () => `{{ regexSplit ${pat()} ${subject()} ${pick(NS)} | toJson }}`,
    () => `{{ regexSplit ${pat()} ${subject()} ${pick(NS)} | len }}`,
    () => `{{ regexQuoteMeta ${subject()} }}`,
    () => `{{ regexMatch (printf "^%s$" (regexQuoteMeta ${subject()})) ${subject()} }}`,
    () => `{{ regexFindAll ${pat()} ${subject()} ${pick(['"2"', '1.5', 'nil', '-9223372036854775808', '9223372036854775807'])} }}`,
    () => `{{ regexMatch ${pick(['1', 'nil', '.', '(list "a")'])} ${subject()} }}`,
    () => `{{ if regexMatch ${pat()} ${subject()} }}yes{{ else }}no{{ end }}`,
    () => `{{ slice ${pick(LISTS)} ${pick(INDICES)} }}`,
    () => `{{ slice ${pick(LISTS)} ${pick(INDICES)} | toJson }}`,
    () => `{{ slice ${pick(LISTS)} ${pick(INDICES)} | len }}`,
    () => `{{ range slice (regexSplit "," ${subject()} -1) ${pick(['1', '0 1', '1 2'])} }}<{{ . }}>{{ end }}`,
    () => `{{ regexFindAll ${pat()} ${subject()} -1 | uniq | toJson }}`,
  ];
  const requests: CorpusRequest[] = [];
  for (let r = 0; r < count / 50; r++) {
    const data = { k1: b64(pick(SUBJECTS)), k2: b64(rnd() < 0.5 ? pick(PATTERNS) : pick(REPLS)), 'k-3': b64(pick(SUBJECTS)) };
    requests.push({ data, jobs: Array.from({ length: 50 }, (_, j) => ({ name: `re-${r}-${j}`, source: pick(SHAPES)() })) });
  }
  return requests;
}

/** Every pattern against every subject with every function (no randomness). */
function regexGrid(): CorpusRequest[] {
  return SUBJECTS.map((s) => ({
    data: { k1: b64(s) },
    jobs: PATTERNS.flatMap((p, i) => [
      `{{ regexMatch ${q(p)} .k1 }}|{{ regexFindAll ${q(p)} .k1 -1 | toJson }}`,
      `{{ regexSplit ${q(p)} .k1 -1 | toJson }}|{{ regexSplit ${q(p)} .k1 2 | toJson }}`,
      `{{ regexReplaceAll ${q(p)} .k1 "<$1|\${user}|$0>" }}|{{ regexReplaceAllLiteral ${q(p)} .k1 "<$1>" }}`,
    ].map((source, j) => ({ name: `grid-${i}-${j}`, source }))),
  }));
}

t.test('the regular-expression functions and slice render exactly as Go, or decline', async (t) => {
  const requests = [...regexGrid(), ...regexCorpus(3000, 20261128)];
  const c = compare(requests);
  t.same(c.diffs, [], 'no difference where the TypeScript engine renders');
  const total = c.rendered + c.declined;
  t.comment(`${c.rendered} of ${total} templates rendered in TypeScript (${c.tsOfGoOk} of the ${c.goOk} Go renders without error); declined: ${topReasons(c)}`);
  t.ok(c.tsOfGoOk > c.goOk * 0.8, `TypeScript renders ${c.tsOfGoOk} of the ${c.goOk} templates Go renders without error`);
});

/** Renders in TypeScript (5 s deadline): the output, or which way it stopped, and the time taken
 *  (reported, never asserted: a bound is shown by the way a render stops, not by the clock). */
function attempt(source: string, data: Record<string, string>, deadlineMs = 5000): { out?: string; stopped?: string; ms: number } {
  const enc = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, new Uint8Array(Buffer.from(v))]));
  const started = performance.now();
  const limits = { maxOutput: 1 << 20, deadline: started + deadlineMs, onTimeout: () => new Error('timeout') };
  try {
    const out = Buffer.from(renderGoText('t', source, enc, limits)).toString();
    return { out, ms: performance.now() - started };
  } catch (err) {
    const stopped = err instanceof Unsupported ? `declined: ${err.message}` : err instanceof OutputTooLarge ? 'too large' : (err as Error).message;
    return { stopped, ms: performance.now() - started };
  }
}

t.test('hostile patterns and inputs cost bounded time, and stop with a reason', async (t) => {
  const a = 'a'.repeat(100_000);
  // Backtracking shapes are linear in RE2: rendered, fast.
  for (const p of ['(a+)+b', '(a|aa)*c', '(x+x+)+y', '(a*)*$', '^(a?){30}a{30}$']) {
    const r = attempt(`{{ regexMatch ${q(p)} .a }}|{{ regexReplaceAll ${q(p)} .a "x" | len }}`, { a });
    t.ok(r.out !== undefined, `${p} on 100k characters: ${r.out ?? r.stopped} in ${r.ms.toFixed(0)} ms`);
  }
  // Patterns too large to compile here, or past RE2's limits: declined (the Go engine words
  // RE2's error, or renders in its sandbox), before any large compile.
  const large = [
    '[a-z]{1000}'.repeat(30), '('.repeat(5000) + 'a' + ')'.repeat(5000), '(?:(?:(?:a{1000}){1000}){1000})', 'x{1001}', 'a'.repeat(60_000),
  ];
  for (const p of large) {
    const r = attempt(`{{ regexMatch .p .a }}`, { a: 'aaa', p });
    t.ok(r.stopped?.startsWith('declined: a regular expression'), `${p.slice(0, 24)}…: ${r.stopped} in ${r.ms.toFixed(0)} ms`);
  }
  // A search longer than one search may scan (program size × text) is declined, not run.
  const big = attempt(`{{ regexFindAll ${q('[a-z]{100}[0-9]')} .a -1 | len }}`, { a: 'a'.repeat(1 << 20) });
  t.match(big.stopped, /^declined: a regular expression search longer/, `1 MiB × a 100-class pattern: ${big.stopped}`);
  // Many matches: bounded by the output limit (Go's message) and the memory allowance.
  const many = attempt('{{ regexFindAll "" .a -1 }}', { a: 'a'.repeat(1 << 20) });
  t.ok(many.stopped !== undefined, `an empty match at each of 1 Mi positions: ${many.stopped} in ${many.ms.toFixed(0)} ms`);
  const huge = attempt('{{ regexFindAll "a" .a 9223372036854775807 | len }}|{{ regexSplit "a" .a -1 | len }}', { a });
  t.same(huge.out, '100000|100001', 'the largest count is all matches');
  // Quadratic work (each search scans to the end of the text, as in Go) stops at the
  // render's deadline (the caller's timeout error), one bounded search past it at most.
  const quadratic = attempt('{{ regexFindAll "a*b|a" .a -1 | len }}', { a: 'a'.repeat(200_000) }, 1000);
  t.equal(quadratic.stopped, 'timeout', 'stopped by the deadline');
  t.comment(`a quadratic search stopped after ${quadratic.ms.toFixed(0)} ms (deadline 1000 ms)`);
  t.equal(attempt('{{ regexFindAll "a|a*b" .a -1 | len }}', { a: 'a'.repeat(200_000) }).out, '200000', 'the same matches in the other order are linear');
  // slice of a long list: charged like any list.
  const sliced = attempt('{{ slice (until 1000000) 1 999999 | len }}', {});
  t.same(sliced.out, '999998');
});

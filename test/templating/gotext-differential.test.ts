// Differential test of ESI's TypeScript Go-template engine (src/templating/gotext/) against
// the Go engine compiled natively (the oracle), over the corpus of go-differential.test.ts
// (ESO's documented uses, generated Sprig/ESO-helper pipelines, parse-only requests) plus
// generated control structures (if/else if/with/range/break/continue/define/template/
// block, variables, comparisons, trim markers). Wherever the TypeScript engine renders, its
// output must be byte-identical to Go's; wherever it declines (Unsupported), the Go engine
// renders (src/templating/go/index.ts), so declining is allowed but counted.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { builtEngineDir } from '../../src/templating/go/locate.js';
import { OutputTooLarge, parseGoText, renderGoText, TYPESCRIPT_FUNCTIONS, Unsupported } from '../../src/templating/gotext/index.js';
import { b64, documented, generated, prng, type CorpusRequest } from './go-corpus.js';

const native = join(builtEngineDir(), 'engine-native');
if (!existsSync(native)) throw new Error(`${native} missing: run npm run build:gotemplate`);

type Result = { output?: string; error?: string };

function oracle(requests: CorpusRequest[]): Result[][] {
  const ref = spawnSync(native, [], { input: requests.map((r) => JSON.stringify({ maxOutput: 1 << 20, ...r })).join('\n') + '\n', maxBuffer: 256 * 1024 * 1024, timeout: 120_000 });
  if (ref.status !== 0) throw new Error(`native engine failed: ${ref.stderr}`);
  return ref.stdout.toString('utf8').trimEnd().split('\n').map((l) => (JSON.parse(l) as { results: Result[] }).results);
}

const KEYS = ['.k1', '.k2', '(index . "k-3")', '$.k1', '$v', '.'];
const CONDS = [
  (k: string) => k, (k: string) => `eq ${k} "42"`, (k: string) => `ne ${k} ""`, (k: string) => `not ${k}`,
  (k: string) => `and ${k} .k2`, (k: string) => `or ${k} "x"`, (k: string) => `lt (len ${k}) 5`, (k: string) => `contains "a" ${k}`,
  (k: string) => `hasKey (dict "a" ${k}) "a"`, (k: string) => `empty ${k}`, (k: string) => `eq (len ${k}) 0 3`,
];
const LISTS = ['(splitList "," .k1)', '(list 1 "two" 3.5 nil)', '(dict "b" 1 "a" .k2)', '(list)', '.', '(.k2 | fromJson)', '(splitList "" .k2)'];
const BODIES = ['{{ $i }}={{ $e }};', '{{ if eq $i 1 }}{{ break }}{{ end }}[{{ $e }}]', '{{ if $e }}{{ continue }}{{ end }}-{{ $i }}', '{{ $e | toJson }}', '{{ . }}'];

/** Nested control structures over the corpus' data (seeded). */
function controls(count: number, seed: number): CorpusRequest[] {
  const rnd = prng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const VALUES = ['42', '', 'a,b,c', '{"x":[1,2],"y":{"z":null},"w":1e-7}', 'héllo', 'null', '[1,"a"]', '0'];
  let blocks = 0;
  const block = (depth: number): string => {
    const k = pick(KEYS);
    const inner = () => (depth > 2 ? pick(['{{ . }}', 'x', '{{ $v }}', '{{- " t " -}}']) : block(depth + 1));
    switch (Math.floor(rnd() * 7)) {
      case 0:
        return `{{ if ${pick(CONDS)(k)} }}${inner()}{{ else if ${pick(CONDS)(pick(KEYS))} }}B{{ else }}${inner()}{{ end }}`;
      case 1:
        return `{{ with ${k} }}${inner()}{{ else with .k2 }}W{{ . }}{{ else }}none{{ end }}`;
      case 2:
        return rnd() < 0.3
          ? `{{ range $e := ${pick(['3', '0', '-1', 'len .k1', ...LISTS])} }}[{{ $e }}]${depth > 2 ? '' : inner()}{{ else }}none{{ end }}`
          : `{{ range $i, $e := ${pick(LISTS)} }}${pick(BODIES)}${depth > 2 ? '' : inner()}{{ else }}empty{{ end }}`;
      case 3:
        return `{{ $v = ${pick(['.k1', 'len .k2', '"s"', '(list 1 2)', 'printf "%s-%d" .k1 3'])} }}${inner()}{{ $v }}`;
      case 4:
        return `{{ template "d" ${k} }}${inner()}`;
      case 5:
        return `{{- ${k} | ${pick(['quote', 'upper', 'len', 'toJson', 'b64enc', 'squote', 'print', 'html', 'js', 'urlquery', 'default "d"'])} -}}\n ${inner()}`;
      default:
        return `{{ block "b${blocks++}" ${k} }}<{{ . }}>{{ end }}${inner()}`;
    }
  };
  const requests: CorpusRequest[] = [];
  for (let r = 0; r < count / 50; r++) {
    const data = { k1: b64(pick(VALUES)), k2: b64(pick(VALUES)), 'k-3': b64(pick(VALUES)) };
    const jobs = Array.from({ length: 50 }, (_, j) => ({
      name: `ctl-${r}-${j}`,
      source: `{{ define "d" }}({{ . }}){{ end }}{{ $v := .k1 }}${block(0)}${block(1)}`,
    }));
    requests.push({ data, jobs });
  }
  return requests;
}

t.test('the TypeScript engine renders exactly as the native Go engine, or declines', async (t) => {
  const requests: CorpusRequest[] = [...documented(), ...generated(3000, 20261123), ...controls(2000, 20261128), ...generated(500, 7).map((r) => ({ ...r, parseOnly: true }))];
  const expected = oracle(requests);
  let rendered = 0;
  let declined = 0;
  // Templates Go renders (or parses) without an error, and how many of those TypeScript does.
  let goOk = 0;
  let tsOfGoOk = 0;
  const reasons = new Map<string, number>();
  const diffs: string[] = [];
  requests.forEach((req, i) => {
    const data = Object.fromEntries(Object.entries(req.data).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]));
    req.jobs.forEach((job, j) => {
      const want = expected[i]![j]!;
      if (want.error === undefined) goOk++;
      let got: Result;
      try {
        if (req.parseOnly) {
          parseGoText(job.source);
          got = {};
        } else {
          const limits = { maxOutput: 1 << 20, deadline: performance.now() + 10_000, onTimeout: () => new Error('timeout') };
          got = { output: Buffer.from(renderGoText(job.name, job.source, data, limits)).toString('base64') };
        }
        rendered++;
        if (want.error === undefined) tsOfGoOk++;
      } catch (err) {
        if (err instanceof Unsupported) {
          declined++;
          const why = err.message.replace(/"[^"]*"/g, '"…"');
          reasons.set(why, (reasons.get(why) ?? 0) + 1);
          return;
        }
        if (!(err instanceof OutputTooLarge)) throw err;
        rendered++;
        got = { error: `template: ${job.name}: rendered output exceeds the size limit` };
      }
      const same = req.parseOnly ? want.error === undefined : got.output === (want.error === undefined ? (want.output ?? '') : want.output) && got.error === want.error;
      if (!same && diffs.length < 10) diffs.push(`${job.name} ${JSON.stringify(job.source)}: ts ${JSON.stringify(got)} go ${JSON.stringify(want)}`);
    });
  });
  t.same(diffs, [], 'no difference where the TypeScript engine renders');
  const total = rendered + declined;
  t.comment(`${rendered} of ${total} templates rendered in TypeScript; declined: ${JSON.stringify([...reasons].sort((a, b) => b[1] - a[1]).slice(0, 12))}`);
  // The corpus is built to fail often (unknown keys, wrong types, syntax errors): Go words
  // every error, so those always go to Go. Of what Go renders, most renders here.
  t.ok(tsOfGoOk > goOk * 0.6, `TypeScript renders ${tsOfGoOk} of the ${goOk} templates Go renders without error (${rendered} of ${total} in all)`);
  const doc = documented()[0]!;
  const docRendered = doc.jobs.filter((j) => {
    try {
      parseGoText(j.source);
      return true;
    } catch {
      return false;
    }
  }).length;
  t.ok(docRendered >= doc.jobs.length - 3, `ESO's documented uses parse in TypeScript (${docRendered}/${doc.jobs.length}; ESO's PEM/JWK helpers and toYaml go to Go)`);
});

t.test('docs/templates.md lists exactly the functions the TypeScript engine renders', async (t) => {
  const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'templates.md'), 'utf8');
  const section = doc.slice(doc.indexOf('**Which engine renders a template.**'), doc.indexOf('The Go engine renders a template that uses'));
  const listed = section.slice(section.indexOf('these functions:')).match(/`[^`]+`/g)!.flatMap((w) => w.slice(1, -1).split(/\s+/)).filter((w) => /^[a-z][A-Za-z0-9]*$/.test(w));
  t.same([...new Set(listed)].sort(), [...TYPESCRIPT_FUNCTIONS].sort());
});

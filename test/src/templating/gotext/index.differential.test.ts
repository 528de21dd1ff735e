// Differential test of ESI's TypeScript Go-template engine (src/templating/gotext/) against
// the Go engine compiled natively (the oracle), over the corpus of go-differential.test.ts
// (ESO's documented uses, generated Sprig/ESO-helper pipelines, parse-only requests) plus
// generated control structures (if/else if/with/range/break/continue/define/template/
// block, variables, comparisons, trim markers); the comparison is gotext-oracle.ts's.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseGoText, TYPESCRIPT_FUNCTIONS } from '../../../../src/templating/gotext/index.js';
import { b64, documented, generated, prng, type CorpusRequest } from '../../../support/templating/go-corpus.js';
import { compare, topReasons } from '../../../support/templating/gotext-oracle.js';

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

/** Missing keys and fields of strings (Go's message: position in bytes, the executing template, the node as
 *  written, the key quoted, values redacted) in seeded templates. */
function missingKeys(count: number, seed: number): CorpusRequest[] {
  const rnd = prng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const MISSING = ['.nokey', '.k1.x', '.k1.x.y', '$.k2.json', '(split "," .k1)._0.q', '$.nope', '$v.missing', '(.k2 | fromJson).zz', '.json.a', '$j.a.b', '.ключ', '.k_3', '.secret'];
  const PREFIX = ['', 'héllo ☃ {{ .k1 }}\n', '{{/* c */}}\n\n  ', '{{ $v := dict "a" 1 }}', '{{ $j := .k2 | fromJson }}', '{{- " é " -}}', 'x\r\ny '];
  const WRAP = [
    (m: string) => `{{ ${m} }}`, (m: string) => `{{ if ${m} }}y{{ end }}`, (m: string) => `{{ ${m} | upper }}`, (m: string) => `{{ printf "%v" ${m} }}`,
    (m: string) => `{{ define "inner" }}{{ ${m} }}{{ end }}{{ template "inner" . }}`, (m: string) => `{{ block "b" . }}<{{ ${m} }}>{{ end }}`,
    (m: string) => `{{ range (list 1 2) }}{{ $.k1 }}{{ end }}{{ with .k1 }}{{ $ | len }}{{ end }}{{ ${m} }}`, (m: string) => `{{ template "t2" ${m} }}{{ define "t2" }}{{ . }}{{ end }}`,
  ];
  const NAMES = ['m', 'ExternalSecret db target.template.data.password', 'tpl "quoted" é', 'secret'];
  const requests: CorpusRequest[] = [];
  for (let r = 0; r < count / 50; r++) {
    const data = { k1: b64(pick(['x', 'nokey', 'secret', '42'])), k2: b64(pick(['{"a":{"b":1}}', '{}', 'null'])), json: b64('j'), secret: b64('s3cr3t-nokey') };
    const jobs = Array.from({ length: 50 }, (_, j) => {
      const m = pick(MISSING);
      const source = `${pick(PREFIX)}${m.startsWith('$v') && rnd() < 0.8 ? '{{ $v := dict "a" 1 }}' : ''}${m.startsWith('$j') ? '{{ $j := .k2 | fromJson }}' : ''}${pick(WRAP)(m)}`;
      return { name: `${pick(NAMES)}-${r}-${j}`, source };
    });
    requests.push({ data, jobs });
  }
  return requests;
}

t.test("a missing key, or a field of a string, fails with Go's own message", async (t) => {
  const c = compare(missingKeys(1000, 20261129));
  t.same(c.diffs, [], 'byte-identical messages (or declined)');
  t.comment(`${c.goErrors} of ${c.rendered + c.declined} failed with Go's message worded in TypeScript; declined: ${topReasons(c)}`);
  t.ok(c.goErrors > 600, `${c.goErrors} messages worded in TypeScript`);
});

t.test('the TypeScript engine renders exactly as the native Go engine, or declines', async (t) => {
  const requests: CorpusRequest[] = [...documented(), ...generated(3000, 20261123), ...controls(2000, 20261128), ...generated(500, 7).map((r) => ({ ...r, parseOnly: true }))];
  const c = compare(requests);
  t.same(c.diffs, [], 'no difference where the TypeScript engine renders');
  const total = c.rendered + c.declined;
  t.comment(`${c.rendered} of ${total} templates rendered in TypeScript; declined: ${topReasons(c)}`);
  // The corpus is built to fail often (unknown keys, wrong types, syntax errors): Go words
  // every error, so those always go to Go. Of what Go renders, most renders here.
  t.ok(c.tsOfGoOk > c.goOk * 0.6, `TypeScript renders ${c.tsOfGoOk} of the ${c.goOk} templates Go renders without error (${c.rendered} of ${total} in all)`);
  const doc = documented()[0]!;
  const docRendered = doc.jobs.filter((j) => {
    try {
      parseGoText(j.source);
      return true;
    } catch {
      return false;
    }
  }).length;
  t.ok(docRendered >= doc.jobs.length - 3, `ESO's documented uses parse in TypeScript (${docRendered}/${doc.jobs.length}; ESO's PEM/JWK helpers go to Go)`);
});

t.test('docs/templates.md lists exactly the functions the TypeScript engine renders', async (t) => {
  const doc = readFileSync(join(import.meta.dirname, '..', '..', '..', '..', 'docs', 'templates.md'), 'utf8');
  const section = doc.slice(doc.indexOf('**Which engine renders a template.**'), doc.indexOf('The Go engine renders a template that uses'));
  const listed = section.slice(section.indexOf('these functions:')).match(/`[^`]+`/g)!.flatMap((w) => w.slice(1, -1).split(/\s+/)).filter((w) => /^[a-z][A-Za-z0-9]*$/.test(w));
  t.same([...new Set(listed)].sort(), [...TYPESCRIPT_FUNCTIONS].sort());
});

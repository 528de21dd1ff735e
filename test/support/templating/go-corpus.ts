// The corpus of the Go template differential tests (test/src/templating/go/runner.differential.test.ts
// and gotext-differential.test.ts): ESO's documented template uses and seeded generated
// templates and inputs (Sprig functions, ESO helpers, control structures, error paths).

export interface CorpusRequest {
  parseOnly?: boolean;
  data: Record<string, string>;
  jobs: { name: string; source: string }[];
}

export const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

// mulberry32: a small seeded PRNG.
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

const VALUES = [
  'hello world', 'héllo wörld ☃', '42', '-7', '3.14', '', '  padded  ', 'a,b,c,,d', 'line1\nline2\n',
  '{"a":1,"b":[1,2,{"c":"d"}],"e":null}', 'a: 1\nb: [x, y]\nc:\n  d: e\n', b64('secret-bytes'), 'not base64!',
  'postgres://user:pw@db:5432/app', 'CamelCaseValue', 'snake_case_value', 'true', 'null', '<b>&"\'</b>',
];
const UNARY = [
  'upper', 'lower', 'title', 'untitle', 'trim', 'b64enc', 'b64dec', 'b32enc', 'sha256sum', 'sha1sum', 'adler32sum',
  'quote', 'squote', 'snakecase', 'camelcase', 'kebabcase', 'swapcase', 'initials', 'nospace', 'toJson',
  'toPrettyJson', 'toString', 'urlquery', 'html', 'js', 'len', 'toYaml', 'fromJson', 'fromYaml', 'int', 'float64',
  'toStrings', 'sortAlpha', 'uniq', 'compact', 'first', 'last', 'empty', 'not', 'kindOf', 'typeOf', 'fromJsonArray',
];
const WITH_ARGS = [
  'replace "a" "b"', 'trunc 5', 'trunc -3', 'abbrev 6', 'repeat 3', 'trimPrefix "h"', 'trimSuffix "d"', 'indent 2',
  'nindent 4', 'wrap 5', 'contains "o"', 'hasPrefix "he"', 'hasSuffix "ld"', 'default "fallback"', 'printf "%q"',
  'printf "<%s>"', 'splitList "," | join "-"', 'split ","', 'cat "x"', 'regexFind "[0-9]+"', 'regexMatch "^[a-z]"',
  'regexSplit "," -1', 'splitn "," 2', 'trimAll " "', 'substr 1 4', 'add 1', 'mul 3', 'ternary "yes" "no"',
  'filterPEM "CERTIFICATE"', 'jwkPublicKeyPem', 'pkcs12cert', 'dict "k" | toJson', 'list 1 2 | toJson',
];
const SHAPES: ((pipe: () => string, key: () => string) => string)[] = [
  (p, k) => `{{ ${k()} | ${p()} }}`,
  (p, k) => `{{ ${k()} | ${p()} | ${p()} }}`,
  (p, k) => `pre-{{ ${k()} | ${p()} }}-post {{ ${k()} }}`,
  (p, k) => `{{ if ${k()} }}A{{ ${k()} | ${p()} }}{{ else }}B{{ end }}`,
  (_p, k) => `{{ range $i, $v := splitList "," ${k()} }}[{{ $i }}:{{ $v | upper }}]{{ end }}`,
  (p, k) => `{{ with ${k()} }}{{ . | ${p()} }}{{ else }}none{{ end }}`,
  (p) => `{{ index . "k-3" | ${p()} }}`,
  (p, k) => `{{- ${k()} | ${p()} -}}\n  x  `,
  (p, k) => `{{ $x := ${k()} | ${p()} }}{{ $x }}|{{ $x | ${p()} }}`,
  (_p, k) => `{{ ${k()} | fromYaml | toJson }}`,
  (_p, k) => `{{ (${k()} | fromJson).b }}`,
  () => '{{ .nokey }}',
  (p) => `{{ .k1 | ${p()} `,
  () => '{{ .k1 | nosuchfunction }}',
  (_p, k) => `{{ printf "%s:%s" ${k()} ${k()} | b64enc }}`,
  (_p, k) => `{{ ${k()} | sha256sum | trunc 12 }}`,
  (_p, k) => `{{ toYaml (dict "a" ${k()} "n" (list 1 ${k()})) }}`,
];

export function generated(count: number, seed: number): { data: Record<string, string>; jobs: { name: string; source: string }[] }[] {
  const rnd = prng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const requests = [];
  for (let r = 0; r < count / 50; r++) {
    const bin = Buffer.from(Array.from({ length: 24 }, () => Math.floor(rnd() * 256)));
    const data = { k1: b64(pick(VALUES)), k2: b64(pick(VALUES)), 'k-3': b64(pick(VALUES)), bin: b64(bin) };
    const jobs = Array.from({ length: 50 }, (_, j) => {
      const pipe = () => (rnd() < 0.6 ? pick(UNARY) : pick(WITH_ARGS));
      const key = () => pick(['.k1', '.k2', '.bin', '(index . "k-3")']);
      return { name: `gen-${r}-${j}`, source: pick(SHAPES)(pipe, key) };
    });
    requests.push({ data, jobs });
  }
  return requests;
}

/** Templates in the style of ESO's documentation (values made up). */
export function documented(): { data: Record<string, string>; jobs: { name: string; source: string }[] }[] {
  const data = {
    user: b64('admin'), password: b64('p@ss:w0rd'), dburl: b64('postgres://db.example:5432/app'),
    'service-account-token': b64('eyJhbGciOi.token'), json: b64('{"hostname":"h","ports":[1,2]}'),
    jwk: b64('{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRjJi8pdoklpgQsmxlVYP7lIAbA4N-ZNAjAYLXY"}'),
    bundle: b64('-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n'),
  };
  const jobs = [
    'datasources:\n- name: Graphite\n  type: graphite\n  access: proxy\n  url: http://localhost:8080\n  password: "{{ .password }}"\n  user: "{{ .user }}"\n',
    '{{ .dburl | replace "postgres://" "postgresql://" }}',
    '{{ index . "service-account-token" }}',
    '{"auths":{"registry.example":{"username":"{{ .user }}","password":"{{ .password }}","auth":"{{ printf "%s:%s" .user .password | b64enc }}"}}}',
    '{{ .jwk | jwkPublicKeyPem }}',
    '{{ .bundle | filterPEM "CERTIFICATE" }}',
    '{{ .json | fromJson | toYaml }}',
    '{{ (.json | fromJson).hostname }}',
    'config.yaml: |\n  user: {{ .user | quote }}\n  password: {{ .password | quote }}',
    '{{ .password | b64enc | b64dec }}',
    '{{- range $k, $v := . }}{{ $k }}={{ $v | len }}\n{{ end -}}',
  ].map((source, i) => ({ name: `eso-doc-${i}`, source }));
  return [{ data, jobs }];
}


// Differential test of the TypeScript engine's toYaml (src/templating/gotext/yaml.ts)
// against the native Go engine (gotext-oracle.ts): scalars that read back as other types
// (bools, null, numbers, words of YAML 1.1), key order (digit runs, letters first), nested
// lists and maps, empty and nil collections, and values that need go-yaml's quoting or
// folding (which decline to the Go engine).
import t from 'tap';
import { b64, prng, type CorpusRequest } from '../../../support/templating/go-corpus.js';
import { compare, topReasons } from '../../../support/templating/gotext-oracle.js';

const STRINGS = [
  '', 'true', 'True', 'TRUE', 'yes', 'Y', 'y', 'n', 'NO', 'on', 'Off', 'null', 'Null', '~', 'nil', 'offset', 'yesterday', '123', '-7', '+5',
  '3.14', '1.', '.5', '1.2.3.4', '10.0.0.1', '1e3', '0x1F', '0755', '0b101', '2001-12-14', '12:30', '1_000', 'a b', 'db.local', '/path/to',
  '-x', '.x', '---', '...', 'x'.repeat(101), 'x'.repeat(100), 'héllo', 'a:b', 'a: b', 'p@ss', "it's", 'line\nline', '_under', 'k-3',
  'a/b/c', 'CamelCase', 'postgres', '5432', '.inf', '-.inf', '.nan', '<<', '=', 'v1.2.3', 'a-', 'a.', '9', '09', '0', '-0',
  'hello world', 'a  b', ' lead', 'trail ', 'yes no', 'null value', '1 2', 'x y'.repeat(20), `${'word '.repeat(14)}end`, `${'w '.repeat(37)}end`,
  `${'w '.repeat(38)}e`, `${'ab '.repeat(25)}c`, 'a - b', 'a -b', 'a #b', '- a', 'a\tb',
];
const KEYSETS = [
  ['a10', 'a2', 'b', 'B', '_x', '10', '9', 'a01', 'a1', 'a001', 'A', 'z', '1a', 'a0', 'a00'],
  ['x1y2', 'x1y10', 'x01y', 'x1y', 'x', 'x-1', 'x_1', 'x.1', 'x/1'],
  ['true', 'null', '123', '', 'a b', 'k'],
];
const q = (s: string) => JSON.stringify(s);

function yamlCorpus(count: number, seed: number): CorpusRequest[] {
  const rnd = prng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const scalar = (): string => pick(['.k1', '.k2', q(pick(STRINGS)), '1', '-3', '3.0', '3.5', '1e21', '1e300', 'true', 'nil', '(int64 7)', '(float64 2)']);
  const value = (depth: number): string => {
    if (depth > 3 || rnd() < 0.4) return scalar();
    switch (Math.floor(rnd() * 6)) {
      case 0:
        return `(list ${Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth + 1)).join(' ')})`;
      case 1: {
        const keys = pick(KEYSETS);
        return `(dict ${Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => `${q(pick(keys))} ${value(depth + 1)}`).join(' ')})`;
      }
      case 2:
        return '(.json | fromJson)';
      case 3:
        return pick(['(list)', '(dict)', '(regexFindAll "z" "a" -1)', '(splitList "," .k1)', '.']);
      default:
        return `(dict ${q(pick(pick(KEYSETS)))} ${value(depth + 1)})`;
    }
  };
  const JSONS = ['{"a":1,"b":[1,2,{"c":"d"}],"e":null}', '{"hostname":"h","ports":[1,2]}', '[[1,[2]],{"x":{"y":[]}},{}]', '{"n":1.5}', '"s"', '{"k":"a b"}', '{"a10":1,"a9":2}'];
  const requests: CorpusRequest[] = [];
  for (let r = 0; r < count / 50; r++) {
    const data = { k1: b64(pick(STRINGS)), k2: b64(pick(STRINGS)), json: b64(pick(JSONS)) };
    requests.push({ data, jobs: Array.from({ length: 50 }, (_, j) => ({ name: `yaml-${r}-${j}`, source: `{{ toYaml ${value(0)} }}` })) });
  }
  return requests;
}

/** Each string alone, as a value and as a key; each key set in one map. */
function yamlGrid(): CorpusRequest[] {
  const jobs = [
    ...STRINGS.flatMap((s, i) => [`{{ toYaml ${q(s)} }}`, `{{ toYaml (dict ${q(s)} ${q(s)}) }}`, `{{ toYaml (list ${q(s)} (list ${q(s)})) }}`].map((source, j) => ({ name: `s-${i}-${j}`, source }))),
    ...KEYSETS.map((keys, i) => ({ name: `k-${i}`, source: `{{ toYaml (dict ${keys.map((k, j) => `${q(k)} ${j}`).join(' ')}) }}` })),
    // Around go-yaml's 80 columns, at several depths: where a line would fold.
    ...Array.from({ length: 30 }, (_, n) => `${'ab '.repeat(20 + Math.floor(n / 3))}${'xyz'.slice(0, n % 3 + 1)}`).flatMap((v, i) =>
      [q(v), `(list ${q(v)})`, `(dict "key" ${q(v)})`, `(dict "k" (list (dict "k2" ${q(v)})))`].map((x, j) => ({ name: `w-${i}-${j}`, source: `{{ toYaml ${x} }}` }))),
  ];
  return [{ data: {}, jobs }];
}

t.test('toYaml writes exactly what the Go engine writes, or declines', async (t) => {
  const c = compare([...yamlGrid(), ...yamlCorpus(2000, 20261128)]);
  t.same(c.diffs, [], 'no difference where the TypeScript engine renders');
  t.comment(`${c.rendered} of ${c.rendered + c.declined} rendered in TypeScript (${c.tsOfGoOk} of the ${c.goOk} Go renders without error); declined: ${topReasons(c)}`);
  t.ok(c.tsOfGoOk > c.goOk * 0.3, 'a good part renders in TypeScript');
});

t.test('toYaml of deep and wide values costs bounded time and memory', async (t) => {
  const deep = `${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}`;
  const wide = JSON.stringify(Array.from({ length: 200_000 }, (_, i) => ({ [`k${i}`]: [i] })));
  const c = compare([{ data: { deep: b64(deep), wide: b64(wide) }, jobs: [
    { name: 'deep', source: '{{ .deep | fromJson | toYaml | len }}' },
    { name: 'wide', source: '{{ .wide | fromJson | toYaml | len }}' },
    { name: 'until', source: '{{ until 300000 | toYaml | len }}' },
  ] }]);
  t.same(c.diffs, [], `rendered alike or declined (declined: ${topReasons(c)})`);
});

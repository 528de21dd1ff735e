// `remoteRef.property` as gjson reads it (ESO's providers call gjson.Get): every example of
// gjson's SYNTAX.md on its example document, through extractProperty, the function every
// provider reads a property with. Before the gjson module only dotted paths worked:
// `#`, queries, wildcards, pipes and modifiers were "not found".
import t from 'tap';
import { extractProperty, hasProperty, jsonToSecretMap } from '../../../../src/providers/json-path.js';
import { MAX_STEPS } from '../../../../src/providers/gjson/eval.js';
import { wildcardMatch } from '../../../../src/providers/gjson/match.js';

const doc = Buffer.from(`{
  "name": {"first": "Tom", "last": "Anderson"},
  "age":37,
  "children": ["Sara","Alex","Jack"],
  "fav.movie": "Deer Hunter",
  "friends": [
    {"first": "Dale", "last": "Murphy", "age": 44, "nets": ["ig", "fb", "tw"]},
    {"first": "Roger", "last": "Craig", "age": 68, "nets": ["fb", "tw"]},
    {"first": "Jane", "last": "Murphy", "age": 47, "nets": ["ig", "tw"]}
  ]
}`);
const get = (path: string, value: Buffer = doc) => Buffer.from(extractProperty(value, path)).toString('utf8');

t.test("gjson's documented examples", async (t) => {
  const cases: [string, string][] = [
    ['name.last', 'Anderson'],
    ['age', '37'],
    ['children', '["Sara","Alex","Jack"]'],
    ['children.1', 'Alex'],
    ['friends.1.first', 'Roger'],
    ['child*.2', 'Jack'],
    ['c?ildren.0', 'Sara'],
    ['fav\\.movie', 'Deer Hunter'],
    ['friends.#', '3'],
    ['friends.#.age', '[44,68,47]'],
    ['friends.#(last=="Murphy").first', 'Dale'],
    ['friends.#(last=="Murphy")#.first', '["Dale","Jane"]'],
    ['friends.#(age>45)#.last', '["Craig","Murphy"]'],
    ['friends.#(first%"D*").last', 'Murphy'],
    ['friends.#(first!%"D*").last', 'Craig'],
    ['children.#(!%"*a*")', 'Alex'],
    ['children.#(%"*a*")#', '["Sara","Jack"]'],
    ['friends.#(nets.#(=="fb"))#.first', '["Dale","Roger"]'],
    ['friends|0.first', 'Dale'],
    ['friends.0|first', 'Dale'],
    ['friends|0|first', 'Dale'],
    ['friends|#', '3'],
    ['friends.#(last="Murphy")#.first', '["Dale","Jane"]'],
    ['friends.#(last="Murphy")#.0', '[]'],
    ['friends.#(last="Murphy")#|0.first', 'Dale'],
    ['friends.#(last="Murphy")#.#', '[]'],
    ['friends.#(last="Murphy")#|#', '2'],
    ['children.@reverse', '["Jack","Alex","Sara"]'],
    ['children.@reverse.0', 'Jack'],
    ['@this.name.first', 'Tom'],
    ['friends.#.nets|@flatten', '["ig","fb","tw","fb","tw","ig","tw"]'],
    ['name.@keys', '["first","last"]'],
    ['name.@values', '["Tom","Anderson"]'],
    ['name|@tostr', '{"first":"Tom","last":"Anderson"}'],
    ['@dig:first', '["Tom","Dale","Roger","Jane"]'],
    ['friends.#(age>=68).first', 'Roger'],
    ['friends.#(age<44)#', '[]'],
    ['friends.#(nets.#(=="fb")).last', 'Murphy'],
  ];
  for (const [path, want] of cases) t.equal(get(path), want, path);
});

t.test('absent results are NotFound, malformed paths InvalidSpec', async (t) => {
  for (const path of ['friends.#(last=="Nobody").first', 'friends.#(last="Murphy")#|first', 'name.#', 'nope.*', 'friends.9', '@nosuchmodifier']) {
    t.throws(() => extractProperty(doc, path), { code: 'NotFound' }, path);
  }
  for (const path of ['friends.#(last=="Murphy"', '{name.first,age}', 'children.@pretty']) {
    t.throws(() => extractProperty(doc, path), { code: 'InvalidSpec' }, path);
  }
  t.equal(hasProperty(doc, 'friends.#(age>60)', 'path'), true, 'hasProperty reads gjson too');
});

t.test('existing meanings hold: exact key first, numbers as written, extract of a query', async (t) => {
  const v = Buffer.from('{"a.b":"flat","a":{"b":"nested"},"ids":[{"id":12345678901234567890,"p":1.50}],"t":[{"ok":true,"n":"x"},{"ok":false,"n":"y"}]}');
  t.equal(get('a.b', v), 'flat');
  t.equal(get('ids.0.id', v), '12345678901234567890');
  t.equal(get('ids.#.p', v), '[1.50]');
  t.equal(get('t.#(ok==true).n', v), 'x');
  t.equal(get('t.#(ok==~false).n', v), 'y');
  t.equal(get('t.#(ok!=true)#.n', v), '["y"]');
  t.same(Object.keys(jsonToSecretMap(v, 't.#(n=="y")')), ['ok', 'n'], 'dataFrom.extract of a query result');
});

t.test('bounded cost for hostile paths and patterns', async (t) => {
  t.throws(() => extractProperty(doc, 'a.'.repeat(3000)), { code: 'InvalidSpec', message: /longer than/ });
  t.throws(() => extractProperty(doc, '#('.repeat(40) + ')'.repeat(40)), { code: 'InvalidSpec' });
  const wide = Buffer.from(JSON.stringify({ a: Array.from({ length: 2000 }, () => Array.from({ length: 600 }, () => 1)) }));
  t.throws(() => extractProperty(wide, 'a.#.#(==2)#'), { code: 'InvalidSpec', message: new RegExp(`${MAX_STEPS}`) });
  t.equal(wildcardMatch('a'.repeat(5000), '*a'.repeat(200) + 'b'), false, 'no exponential backtracking');
});

// The JSON path module (src/providers/json-path.ts): both meanings of `property`, prototype safety.
import t from 'tap';
import { deleteProperty, extractProperty, hasProperty, setProperty } from '../../../src/providers/json-path.js';

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

t.test('property: an exact key first, else a dotted path; writes by mode', async (t) => {
  const doc = Buffer.from(JSON.stringify({ 'a.b': 'flat', a: { b: 'nested', 'c.d': 'dot' }, list: ['x', 'y'] }));
  t.equal(text(extractProperty(doc, 'a.b')), 'flat', 'the exact top-level key wins');
  t.equal(text(extractProperty(doc, 'a.c\\.d')), 'dot', '\\. escapes a dot');
  t.equal(text(extractProperty(doc, 'list.1')), 'y', 'array index');
  t.same(JSON.parse(setProperty('{"k":"1"}', 'x.y', 'v', 'path')), { k: '1', x: { y: 'v' } }, 'path mode nests');
  t.same(JSON.parse(setProperty('{"k":"1"}', 'x.y', 'v', 'key')), { k: '1', 'x.y': 'v' }, 'key mode is flat');
  t.same(deleteProperty('{"x":{"y":"v"},"k":"1"}', 'x.y', 'path'), { value: '{"k":"1"}', changed: true }, 'emptied parents go');
  t.same(deleteProperty('{"x.y":"v"}', 'x.y', 'key'), { value: undefined, changed: true }, 'nothing left');
  t.equal(hasProperty('{"x":{"y":1}}', 'x.y', 'path'), true);
  t.equal(hasProperty('{"x":{"y":1}}', 'x.y', 'key'), false);
});

t.test('property: prototype segments are refused in every operation and mode', async (t) => {
  for (const property of ['__proto__', 'constructor', 'prototype', 'a.__proto__.b', '__proto__.polluted', 'a\\.b.constructor']) {
    for (const mode of ['path', 'key'] as const) {
      t.throws(() => setProperty('{}', property, 'x', mode), { name: 'RemoteRefError', code: 'InvalidSpec' }, `set ${property} (${mode})`);
      t.throws(() => deleteProperty('{"a":{}}', property, mode), { code: 'InvalidSpec' }, `delete ${property} (${mode})`);
      t.throws(() => hasProperty('{"a":{}}', property, mode), { code: 'InvalidSpec' }, `has ${property} (${mode})`);
    }
    t.throws(() => extractProperty(Buffer.from('{"a":{"b":1}}'), property), { code: 'InvalidSpec' }, `read ${property}`);
  }
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype is untouched');
  t.equal(({} as Record<string, unknown>).b, undefined);
});

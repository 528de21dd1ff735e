// The values a PushSecret pushes (src/controller/pushsecret/values.ts): the whole Secret as sorted
// JSON, ReverseUnicode, a missing key.
import t from 'tap';
import { entryValue, MissingKey, reverseUnicode, sameValue } from '../../../../src/controller/pushsecret/values.js';

const enc = (s: string) => new TextEncoder().encode(s);

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

t.test('values: whole Secret as sorted JSON, ReverseUnicode, missing key', async (t) => {
  const values = { b: enc('2'), a: enc('1'), 'x_U002e_y': enc('3') };
  t.equal(text(entryValue({ match: { remoteRef: { remoteKey: 'r' } } }, values, 's', 0)), '{"a":"1","b":"2","x_U002e_y":"3"}');
  t.equal(text(entryValue({ match: { remoteRef: { remoteKey: 'r' } }, conversionStrategy: 'ReverseUnicode' }, values, 's', 0)), '{"a":"1","b":"2","x.y":"3"}');
  t.equal(text(entryValue({ match: { secretKey: 'x.y', remoteRef: { remoteKey: 'r' } }, conversionStrategy: 'ReverseUnicode' }, values, 's', 0)), '3');
  let err: unknown;
  try {
    entryValue({ match: { secretKey: 'nope', remoteRef: { remoteKey: 'r' } } }, values, 's', 2);
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof MissingKey);
  t.match((err as Error).message, /^spec.data\[2\].match.secretKey "nope" is not a key of Secret "s"$/);
  t.equal(reverseUnicode('a_U0024_b'), 'a$b');
  t.ok(sameValue(enc('{"b":1,"a":{"y":2,"x":1}}'), enc('{"a":{"x":1,"y":2},"b":1}')), 'JSON objects compare by content');
  t.notOk(sameValue(enc('{"a":1}'), enc('{"a":2}')));
  t.notOk(sameValue(enc('abc'), enc('abd')));
});

// User-supplied regexps have Go RE2 semantics in linear time: each namespaceRegexes entry
// is its own pattern (no concatenation), backtracking patterns cost microseconds, and a
// rewrite replaces like Go's ReplaceAllString (an empty match right after a match is not
// replaced again).
import t from 'tap';
import { applyRewrites } from '../../../src/externalsecret/index.js';
import { findNameTest } from '../../../src/providers/regexp.js';
import { clusterStoreAdmits } from '../../../src/stores/access.js';
import type { ClusterSecretStore } from '../../../src/api/types.js';

const store = (namespaceRegexes: string[]): ClusterSecretStore => ({
  apiVersion: 'external-secrets.io/v1', kind: 'ClusterSecretStore', metadata: { name: 's' },
  spec: { conditions: [{ namespaceRegexes }], provider: { fake: { data: [] } } },
} as ClusterSecretStore);
const ns = (name: string) => ({ metadata: { name } });

function timed<T>(fn: () => T): [T, number] {
  const started = performance.now();
  return [fn(), performance.now() - started];
}

t.test('namespaceRegexes entries are patterns of their own', async (t) => {
  t.notOk(clusterStoreAdmits(store(['b)|(.*']), ns('team-a')).ok, 'a malformed entry admits nothing');
  t.ok(clusterStoreAdmits(store(['b)|(.*', 'team-(a|b)']), ns('team-a')).ok, 'the other entries still apply');
  t.notOk(clusterStoreAdmits(store(['team']), ns('my-team-x')).ok, 'an entry matches the whole name');
  t.notOk(clusterStoreAdmits(store(['(?=team)team-a']), ns('team-a')).ok, 'JavaScript-only syntax (lookahead) is not RE2');
});

t.test('backtracking patterns cost linear time', async (t) => {
  // 40 characters: a backtracking engine needs about 2^40 steps for these and would not end
  // within the test's timeout; RE2 answers at once. No clock is asserted (the time is reported).
  const name = 'a'.repeat(40);
  const [admits, ms] = timed(() => clusterStoreAdmits(store(['(a+)+b']), ns(name)).ok);
  t.notOk(admits);
  t.comment(`namespaceRegexes: ${ms.toFixed(1)} ms`);
  const test = findNameTest({ name: { regexp: '(a|aa)+$|(a+)+b' } }, 'SecretStore/x');
  const [found, ms2] = timed(() => test(`${'a'.repeat(40)}!`));
  t.notOk(found);
  t.comment(`find.name.regexp: ${ms2.toFixed(1)} ms`);
});

t.test('rewrites replace like Go\'s ReplaceAllString', async (t) => {
  const v = new Uint8Array([1]);
  const keys = async (source: string, target: string, key: string) => Object.keys(await applyRewrites([{ regexp: { source, target } }], { [key]: v }));
  t.same(await keys('a*', 'X', 'baaac'), ['XbXcX'], 'an empty match right after a match is not replaced');
  t.same(await keys('', '-', 'ab'), ['-a-b-']);
  t.same(await keys('(?P<p>[a-z]+)_(\\d+)', '${p}-$2', 'db_1'), ['db-1'], 'named and numbered groups');
  t.same(await keys('^x', 'y', 'xx'), ['yx'], '^ anchors at the start of the key only');
  await t.rejects(applyRewrites([{ regexp: { source: '(a)\\1', target: '' } }], { a: v }), /invalid rewrite regexp/, 'backreferences are not RE2');
});

// The CI failure summary (.ci/run, README "When CI fails") names each failed assertion with its
// file and subtest path, and only the failed top-level files are re-run.
import t from 'tap';
import { failures } from './tap-failures.js';

const log = [
  '# Subtest: test/a.test.ts',
  '    # Subtest: outer',
  '        ok 1 - fine',
  '        not ok 2 - the pod restarted',
  '          ---',
  '          at:',
  '            fileName: test/a.test.ts',
  '            lineNumber: 75',
  '          ...',
  '        1..2',
  '    not ok 1 - outer # time=12.5ms',
  '      ---',
  '      at: {}',
  '      ...',
  '    1..1',
  'not ok 1 - test/a.test.ts # time=30ms',
  '# Subtest: test/b.test.ts',
  '    ok 1 - fine',
  'ok 2 - test/b.test.ts # time=3ms',
  '',
].join('\n');

t.test('leaves only, with their path and diagnostics; the failed files', async (t) => {
  const { failures: found, files } = failures(log);
  t.same(files, ['test/a.test.ts']);
  t.equal(found.length, 1, 'the parent subtest and the file are not counted again');
  t.same(found[0]!.path, ['test/a.test.ts', 'outer', 'the pod restarted']);
  t.match(found[0]!.diag.join('\n'), /lineNumber: 75/);
});

t.test('a passing log has no failures', async (t) => {
  t.same(failures(log.replace(/not ok/g, 'ok')), { failures: [], files: [] });
});

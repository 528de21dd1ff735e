// The test tree's layout (docs/testing.md) holds for every test file, so a newcomer finds a
// module's tests from the module's path: test/e2e/ holds exactly the files that need the
// platform (computed from their imports, as `npm run test:unit` computes it), and every other
// test file outside test/repo/ mirrors a file or folder of the repository —
// test/<path>.test.ts or test/<path>.<aspect>.test.ts, beside its module under test/support/.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { basename, dirname } from 'node:path';
import { platformReached, ROOT, testFiles } from '../support/needs-platform.js';

const TESTS = testFiles();
const FILES = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
const STEMS = new Set(FILES.map((f) => f.replace(/\.[^./]+$/, '')));
const FOLDERS = new Set(FILES.flatMap((f) => f.split('/').slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join('/'))));

/** The repository path a platform-free test file mirrors, or undefined when it mirrors none. */
function mirrored(test: string): string | undefined {
  let path = test.replace(/\.test\.ts$/, '');
  if (!path.startsWith('test/support/')) path = path.slice('test/'.length);
  for (;;) {
    if (STEMS.has(path) || FOLDERS.has(path)) return path;
    if (!basename(path).includes('.')) return undefined;
    path = `${dirname(path)}/${basename(path).replace(/\.[^.]*$/, '')}`;
  }
}

t.test('test/e2e/ holds exactly the test files that need the platform', async (t) => {
  t.ok(TESTS.length > 150, `${TESTS.length} test files`);
  const misplaced = TESTS.filter((f) => f.startsWith('test/e2e/') !== !!platformReached(f))
    .map((f) => (platformReached(f) ? `${f} needs the platform (reaches ${platformReached(f)}): move it under test/e2e/` : `${f} needs no platform: move it to its module's path`));
  t.same(misplaced, []);
});

t.test('every other test file mirrors a file or folder of the repository', async (t) => {
  const unmirrored = TESTS.filter((f) => !f.startsWith('test/e2e/') && !f.startsWith('test/repo/') && !mirrored(f));
  t.same(unmirrored, [], 'name the file after the module it tests: test/<path>.test.ts or test/<path>.<aspect>.test.ts');
});

t.test('the mirror rule, on examples', async (t) => {
  t.equal(mirrored('test/src/controller/runtime/queue.test.ts'), 'src/controller/runtime/queue');
  t.equal(mirrored('test/webhook/mutate.placement.test.ts'), 'webhook/mutate');
  t.equal(mirrored('test/support/platform/tap-failures.test.ts'), 'test/support/platform/tap-failures');
  t.equal(mirrored('test/src/nowhere.test.ts'), undefined);
});

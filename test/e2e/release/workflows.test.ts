// actionlint over every workflow in .github/workflows: syntax, expressions and their types
// (needs.*.outputs, matrix, env), action inputs, runner labels, job graph. It is the pinned
// Go module (ACTIONLINT_VERSION in test/platform/versions.env), built by
// test/platform/build-binaries.sh and cached under ~/.cache/esi/bin. Its shellcheck and
// pyflakes passes are off (-shellcheck= -pyflakes=) so the findings do not depend on what
// else a machine has installed.
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { cacheDir, pinned } from '../../support/platform/binaries.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

function run(file: string, args: string[], cwd: string, timeout: number): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, timeout, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: `${stdout}${stderr}` });
    });
  });
}

/** Builds (first time: a minute or two) or finds the pinned actionlint. */
async function actionlint(): Promise<string> {
  const built = await run('bash', [join(ROOT, 'test/platform/build-binaries.sh'), 'actionlint'], ROOT, 15 * 60_000);
  if (built.code !== 0) throw new Error(`test/platform/build-binaries.sh actionlint failed:\n${built.out.split('\n').slice(-15).join('\n')}`);
  return join(cacheDir(), 'bin', `actionlint-${pinned('ACTIONLINT_VERSION')}`);
}

// Files named explicitly: actionlint would otherwise look for them through the Git repository.
const lint = (bin: string, cwd: string, files: string[]) => run(bin, ['-no-color', '-shellcheck=', '-pyflakes=', ...files], cwd, 120_000);

t.test('actionlint finds nothing in .github/workflows', async (t) => {
  const bin = await actionlint();
  const version = await run(bin, ['-version'], ROOT, 30_000);
  t.match(version.out, pinned('ACTIONLINT_VERSION'), 'the pinned version');
  const files = (await readdir(join(ROOT, '.github/workflows'))).filter((f) => /\.ya?ml$/.test(f));
  t.ok(files.includes('release.yml'), `workflows: ${files.join(', ')}`);
  const r = await lint(bin, ROOT, files.map((f) => join('.github/workflows', f)));
  t.equal(r.code, 0, r.code === 0 ? 'no findings' : `actionlint findings:\n${r.out}`);
});

t.test('a workflow with a mistake fails the check, the mistake named', async (t) => {
  const bin = await actionlint();
  const dir = await mkdtemp(join(tmpdir(), 'esi-actionlint-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, '.github/workflows'), { recursive: true });
  // An output of a job the step does not need: the release workflow's own pattern, broken.
  await writeFile(join(dir, '.github/workflows/broken.yml'), [
    'on: push',
    'jobs:',
    '  version:',
    '    runs-on: ubuntu-latest',
    '    outputs: { version: "${{ steps.v.outputs.version }}" }',
    '    steps: [{ id: v, run: echo "version=1" >> "$GITHUB_OUTPUT" }]',
    '  images:',
    '    runs-on: ubuntu-latest',
    '    steps: [{ run: "echo ${{ needs.version.outputs.version }}" }]',
    '',
  ].join('\n'));
  const r = await lint(bin, dir, ['.github/workflows/broken.yml']);
  t.not(r.code, 0, 'actionlint exits non-zero');
  t.match(r.out, /broken\.yml:9:\d+: property "version" is not defined/, `and names the file, the line and the output of a job not in needs: ${r.out.trim().split("\n")[0]}`);
});

// The trees bench:controller compares: this checkout, and with `--baseline REF` another
// commit's tree, exported (`git archive`, no checkout of this repository changes) under
// ~/.cache/esi/bench-trees/ and built there (`npm run build`), so both controllers run compiled, from their own bundle, in
// the same run. The copy borrows this checkout's node_modules when the two lockfiles are
// the same, and installs its own (`npm ci`, the shared npm cache) when they differ.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface Tree {
  /** "this tree" or the ref as given. */
  label: string;
  /** The commit, short. */
  commit: string;
  dir: string;
}

function run(cmd: string, args: string[], cwd: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) failed`);
  return r.stdout.trim();
}

/** `npm run build` in `dir` (tsc, then the bundle bin/esi.js runs). */
export function build(dir: string): void {
  const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: dir, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`npm run build failed in ${dir}`);
}

export function thisTree(root: string): Tree {
  const dirty = run('git', ['status', '--porcelain', '--untracked-files=no'], root) ? '+changes' : '';
  return { label: 'this tree', commit: `${run('git', ['rev-parse', '--short', 'HEAD'], root)}${dirty}`, dir: root };
}

/** A built copy of `ref`'s tree (reused when it already holds that commit). */
export function baselineTree(root: string, ref: string): Tree {
  const commit = run('git', ['rev-parse', '--short', `${ref}^{commit}`], root);
  const dir = join(process.env.ESI_CACHE ?? join(homedir(), '.cache', 'esi'), 'bench-trees', commit);
  if (!existsSync(join(dir, 'package.json'))) {
    mkdirSync(dir, { recursive: true });
    const archive = spawnSync('sh', ['-c', `git archive ${commit} | tar -x -C '${dir}'`], { cwd: root, stdio: 'inherit' });
    if (archive.status !== 0) throw new Error(`git archive ${commit} failed`);
  }
  const lock = (d: string) => readFileSync(join(d, 'package-lock.json'), 'utf8');
  if (!existsSync(join(dir, 'node_modules'))) {
    if (lock(dir) === lock(root)) symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    else run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--cache', join(homedir(), '.cache', 'esi', 'npm')], dir);
  }
  build(dir);
  return { label: ref, commit, dir };
}

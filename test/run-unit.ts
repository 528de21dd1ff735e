// `npm run test:unit`: every test file that needs no platform (no control plane, node, store
// backend or cached Kubernetes binary), run by tap without its `before` hook's control plane
// (ESI_NO_PLATFORM=1, honoured by test/support/platform/tap-before.ts; useControlPlane() refuses
// under it, so a misjudged file fails instead of starting one). A file needs the platform
// when its relative imports reach one of PLATFORM: the rule is read from the code, so a new
// test file is sorted without a list to keep. They still need `npm ci`, and the Go template
// tests the engine that `npm run build:gotemplate` caches.
//
//   npm run test:unit                  # run them
//   npm run test:unit -- --list        # print the files and, for the others, what they reach
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
/** Modules that start or locate a platform component (test/support/platform/). */
const PLATFORM = /^test\/support\/platform\/(controlPlane|control-plane-process|binaries)\.ts$|^test\/support\/platform\/(node|backends)\//;
const IMPORT = /(?:^|\s)(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)|^import\s+['"](\.[^'"]+)['"]/gm;

function imports(file: string): string[] {
  const path = join(ROOT, file);
  if (!existsSync(path)) return [];
  return [...readFileSync(path, 'utf8').matchAll(IMPORT)].map((m) => {
    const target = normalize(join(dirname(file), m[1] ?? m[2] ?? m[3]!));
    return target.endsWith('.js') ? target.replace(/\.js$/, '.ts') : target;
  });
}

/** The first platform module a file's imports reach, or undefined. */
function platformReached(file: string, seen = new Set<string>()): string | undefined {
  if (PLATFORM.test(file)) return file;
  if (seen.has(file) || !file.endsWith('.ts')) return undefined;
  seen.add(file);
  for (const dep of imports(file)) {
    const hit = platformReached(dep, seen);
    if (hit) return hit;
  }
  return undefined;
}

const tests = readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.test.ts')).map((f) => relative(ROOT, join(ROOT, 'test', f))).sort();
const unit = tests.filter((f) => !platformReached(f));

if (process.argv.includes('--list')) {
  for (const f of tests) console.log(unit.includes(f) ? `unit      ${f}` : `platform  ${f} (reaches ${platformReached(f)})`);
} else {
  const tap = join(ROOT, 'node_modules', '.bin', 'tap');
  const run = spawnSync(tap, [...unit, ...process.argv.slice(2)], { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ESI_NO_PLATFORM: '1' } });
  process.exitCode = run.status ?? 1;
}

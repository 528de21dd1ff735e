// Which test files need the platform (a control plane, the test node, a store backend or a
// cached Kubernetes binary): those whose relative imports reach one of PLATFORM. The rule is
// read from the code, so a new test file is sorted without a list to keep (docs/testing.md).
// `npm run test:unit` (test/run-unit.ts) runs the others; test/repo/layout.test.ts keeps
// test/e2e/ holding exactly these.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');
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
export function platformReached(file: string, seen = new Set<string>()): string | undefined {
  if (PLATFORM.test(file)) return file;
  if (seen.has(file) || !file.endsWith('.ts')) return undefined;
  seen.add(file);
  for (const dep of imports(file)) {
    const hit = platformReached(dep, seen);
    if (hit) return hit;
  }
  return undefined;
}

/** Every test file, repository-relative, sorted. */
export function testFiles(): string[] {
  return readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts')).map((f) => relative(ROOT, join(ROOT, 'test', f))).sort();
}

// `npm run test:unit`: every test file that needs no platform (no control plane, node, store
// backend or cached Kubernetes binary), run by tap without its `before` hook's control plane
// (ESI_NO_PLATFORM=1, honoured by test/support/platform/tap-before.ts; useControlPlane() refuses
// under it, so a misjudged file fails instead of starting one). Which files need the platform
// is computed from what they import (test/support/needs-platform.ts), never from a folder
// name. They still need `npm ci`, and the Go template tests the engine that
// `npm run build:gotemplate` caches.
//
//   npm run test:unit                  # run them
//   npm run test:unit -- --list        # print the files and, for the others, what they reach
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { platformReached, ROOT, testFiles } from './support/needs-platform.js';

const tests = testFiles();
const unit = tests.filter((f) => !platformReached(f));

if (process.argv.includes('--list')) {
  for (const f of tests) console.log(unit.includes(f) ? `unit      ${f}` : `platform  ${f} (reaches ${platformReached(f)})`);
} else {
  const tap = join(ROOT, 'node_modules', '.bin', 'tap');
  const run = spawnSync(tap, [...unit, ...process.argv.slice(2)], { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ESI_NO_PLATFORM: '1' } });
  process.exitCode = run.status ?? 1;
}

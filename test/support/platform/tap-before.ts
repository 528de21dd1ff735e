// tap `before` hook: starts the shared control plane for the whole test run in a
// detached supervisor, owned by the tap runner (it stops when tap exits, at the latest).
// Not with ESI_NO_PLATFORM=1: `npm run test:unit` (test/run-unit.ts) needs none.
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { SHARED_CONTROLLERS, SHARED_DIR, readSharedState } from './controlPlane.js';

if (process.env.ESI_NO_PLATFORM !== '1' && !readSharedState()) {
  await rm(SHARED_DIR, { recursive: true, force: true });
  await mkdir(SHARED_DIR, { recursive: true });
  const out = openSync(join(SHARED_DIR, 'supervisor.log'), 'a');
  const child = spawn(process.execPath, [...process.execArgv, join(import.meta.dirname, 'supervisor.ts'),
    '--dir', SHARED_DIR, '--owner', String(process.ppid), '--ttl', '5400', '--controllers', SHARED_CONTROLLERS.join(',')], { detached: true, stdio: ['ignore', out, out] });
  child.unref();
  const started = Date.now();
  for (;;) {
    if (readSharedState()) break;
    if (child.exitCode !== null || Date.now() - started > 90_000) {
      const { readFileSync } = await import('node:fs');
      console.error(`control plane failed to start:\n${readFileSync(join(SHARED_DIR, 'supervisor.log'), 'utf8')}`);
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  console.log(`# shared control plane ready in ${Date.now() - started} ms (${SHARED_DIR})`);
}

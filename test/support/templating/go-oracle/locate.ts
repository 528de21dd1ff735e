// Where the Go template oracle is: scripts/build-go-template-engine.sh caches the native
// build of this folder's Go program under ~/.cache/esi/go-template/<hash of its sources>/.
// Tests only: the product renders Go templates in TypeScript (src/templating/go/).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

const SOURCE_DIR = import.meta.dirname;

/** The hash the build script keys its cache by (same files, same order, same framing). */
function sourceHash(): string {
  const files = readdirSync(SOURCE_DIR).filter((f) => f === 'go.mod' || f === 'go.sum' || f.endsWith('.go')).sort();
  const h = createHash('sha256');
  for (const f of files) h.update(f).update('\0').update(readFileSync(join(SOURCE_DIR, f))).update('\0');
  return h.digest('hex').slice(0, 16);
}

/** Path of the native oracle; throws a message that says how to build it. */
export function oracleBinary(): string {
  const path = join(process.env.ESI_CACHE ?? join(homedir(), '.cache', 'esi'), 'go-template', sourceHash(), 'engine-native');
  if (!existsSync(path)) throw new Error(`${path} missing: run npm run build:gotemplate (needs the Go toolchain)`);
  return path;
}

// Where the compiled Go template engine is. scripts/build-go-template-engine.sh caches it
// under ~/.cache/esi/go-template/<hash of the engine's sources>/; an image ships it at
// dist/gotemplate/engine.wasm; ESI_GO_TEMPLATE_WASM overrides both.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../package-root.js';

export const ENGINE_SOURCE_DIR = join('src', 'templating', 'go', 'engine');

/** The hash the build script keys its cache by (same files, same order, same framing). */
export function engineSourceHash(dir: string = join(packageRoot(), ENGINE_SOURCE_DIR)): string {
  const files = readdirSync(dir).filter((f) => f === 'go.mod' || f === 'go.sum' || f.endsWith('.go')).sort();
  const h = createHash('sha256');
  for (const f of files) {
    h.update(f).update('\0').update(readFileSync(join(dir, f))).update('\0');
  }
  return h.digest('hex').slice(0, 16);
}

function cacheDir(): string {
  return join(process.env.ESI_CACHE ?? join(homedir(), '.cache', 'esi'), 'go-template');
}

/** The engine built from this checkout's sources: `engine.wasm` and `engine-native`. */
export function builtEngineDir(): string {
  return join(cacheDir(), engineSourceHash());
}

/** Path of the WebAssembly engine; throws a message that says how to build it. */
export function locateEngineWasm(): string {
  const explicit = process.env.ESI_GO_TEMPLATE_WASM;
  if (explicit) {
    if (!existsSync(explicit)) throw new Error(`ESI_GO_TEMPLATE_WASM=${explicit}: file not found`);
    return explicit;
  }
  const shipped = join(packageRoot(), 'dist', 'gotemplate', 'engine.wasm');
  if (existsSync(shipped)) return shipped;
  const sources = join(packageRoot(), ENGINE_SOURCE_DIR);
  if (existsSync(sources)) {
    const built = join(builtEngineDir(), 'engine.wasm');
    if (existsSync(built)) return built;
  }
  throw new Error('the Go template engine is not built: run `npm run build:gotemplate` (needs the Go toolchain)');
}

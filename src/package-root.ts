// Finds the package root (the folder holding package.json) from this module, so paths
// to shipped files (charts/, package.json) work from src/ under tsx and from dist/.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

export function packageRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('esi: package.json not found above the installed files');
    dir = parent;
  }
  cached = dir;
  return dir;
}

// `npm run generate`: rewrites every generated file of the repository from its one source.
// Each generator module says what it writes and from what:
//   scripts/gen-agent-config-validator.ts  src/agent-config/validator.generated.ts
//   scripts/gen-cluster-crds.ts            the cluster-scoped CRDs in charts/esi/files/crds/
//   scripts/gen-generator-crds.ts          the generators.external-secrets.io CRDs in charts/esi/files/crds/
//   scripts/gen-annotation-docs.ts         docs/annotations.md
// test/scripts/generate.test.ts compares the committed files with generatedFiles(), so a
// change to a source without `npm run generate` fails the unit tests.
//
//   npm run generate                 # rewrite the files
//   npm run generate -- --check      # exit 1 naming the files that are out of date
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { files as agentConfigValidator } from './gen-agent-config-validator.js';
import { files as annotationDocs } from './gen-annotation-docs.js';
import { files as clusterCrds } from './gen-cluster-crds.js';
import { files as generatorCrds } from './gen-generator-crds.js';

const ROOT = join(import.meta.dirname, '..');

/** Every generated file's text, by its path in the repository. */
export async function generatedFiles(): Promise<Map<string, string>> {
  return new Map([...agentConfigValidator(), ...(await clusterCrds()), ...(await generatorCrds()), ...annotationDocs()]);
}

/** The committed text of a generated file ('' when it does not exist). */
export async function committed(path: string): Promise<string> {
  return readFile(join(ROOT, path), 'utf8').catch(() => '');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const [path, text] of await generatedFiles()) {
    if ((await committed(path)) === text) continue;
    if (check) {
      console.error(`${path} is out of date: run npm run generate`);
      stale++;
    } else {
      await writeFile(join(ROOT, path), text);
      console.log(`wrote ${path}`);
    }
  }
  process.exitCode = stale ? 1 : 0;
}

// `npm run images` as a kind user runs it (docs/kind.md): one OCI archive under dist/images/
// whose index names the image, and load-and-install instructions that name the same image as
// the guide does. The archive is the test node's own image (test/e2e/node/ loads it with `ctr
// images import` and installs the chart on it), built once per tree and cached.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';

const ROOT = join(import.meta.dirname, '..', '..');
// The first build of a tree compiles and packs the image: minutes on a loaded 2-core machine.
t.setTimeout(900_000);

t.test('npm run images writes dist/images/esi.tar, named as the guide installs it', async (t) => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/images.ts'], { cwd: ROOT, timeout: 880_000, maxBuffer: 16 << 20 });
  t.match(stdout, /^dist\/images\/esi\.tar: esi\.local\/esi:node$/m);
  const { stdout: index } = await promisify(execFile)('tar', ['-xOf', join(ROOT, 'dist', 'images', 'esi.tar'), './index.json'], { cwd: ROOT });
  const manifests = (JSON.parse(index) as { manifests: { annotations: Record<string, string> }[] }).manifests;
  t.equal(manifests.length, 1);
  t.equal(manifests[0]!.annotations['io.containerd.image.name'], 'esi.local/esi:node', 'the name containerd (and kind load) imports it under');
  const flags = /--set image\.repository=\S+ --set image\.tag=\S+/.exec(stdout)?.[0];
  t.ok(flags, 'it prints the chart flags');
  const guide = readFileSync(join(ROOT, 'docs', 'kind.md'), 'utf8');
  t.ok(guide.includes(flags!), 'docs/kind.md installs the chart with the same image');
  t.ok(guide.includes('kind load image-archive dist/images/esi.tar'), 'and loads the same archive');
});

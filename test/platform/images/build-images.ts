// Builds the container images the test node runs, without a registry or an image builder:
// OCI image-layout archives that `ctr images import` loads into the node's containerd.
//
//   esi.local/esi:node    every `esi` subcommand, like Dockerfile.webhook: /app holds
//                         package.json, bin/esi.js, dist/ (compiled and bundled here), the production
//                         node_modules (npm ci --omit=dev from the lockfile) and the CRDs;
//                         entrypoint /nodejs/bin/node /app/bin/esi.js, user 65532:65532,
//                         no shell, no package manager. Runs the webhook, the injected
//                         agent and the tests' app containers.
//   esi.local/pause:3.10  the pod sandbox: a static Go program (images/pause/main.go).
//
// Same Node.js as the published images: the official binary of NODE_VERSION
// (test/platform/versions.env, installed by test/platform/install-node.sh), whatever Node.js
// runs this script. What differs from Dockerfile.webhook (docs/decisions/0084-release-and-images.md):
// the shared libraries node links (glibc, libstdc++) are this Debian 12 machine's instead of gcr.io/distroless/cc-debian12's; there is no /etc/ssl CA
// bundle (Node.js uses its built-in one); PATH is /nodejs/bin; the agent uses this same image
// rather than the pruned Dockerfile.agent one. test/e2e/release/image-equivalence.test.ts compares
// the built archive with Dockerfile.webhook's final stage.
//
// Archives are cached under ~/.cache/esi/images keyed by a hash of every input, so an
// unchanged tree reuses them.
//
//   tsx test/platform/images/build-images.ts     # prints the two archive paths
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { cacheDir, pinned, pinnedNode } from '../../support/platform/binaries.js';

export const ESI_IMAGE = 'esi.local/esi:node';
export const PAUSE_IMAGE = 'esi.local/pause:3.10';
const ROOT = join(import.meta.dirname, '..', '..', '..');
/** Repository paths the esi image is built from. */
const INPUTS = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/bundle.ts', 'bin', 'src', 'webhook', 'injector', 'certs', 'examples', 'charts/esi/files/crds'];
const UID = 65532;

const log = (msg: string) => process.stderr.write(`[build-images] ${msg}\n`);
function run(cmd: string, args: string[], cwd = ROOT, env: NodeJS.ProcessEnv = process.env): string {
  try {
    return execFileSync(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 }).toString();
  } catch (err) {
    // tsc reports on stdout, npm and tar on stderr: keep the tail of both.
    const { stdout, stderr } = err as { stdout?: Buffer; stderr?: Buffer };
    const out = `${stdout ?? ''}${stderr ?? ''}`.trim().split('\n').slice(-20).join('\n');
    throw new Error(`building the node images: \`${cmd} ${args.join(' ')}\` failed:\n${out}`, { cause: err });
  }
}

function files(path: string): string[] {
  const abs = join(ROOT, path);
  if (!existsSync(abs)) return [];
  if (!statSync(abs).isDirectory()) return [path];
  return readdirSync(abs, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .sort();
}

function inputHash(extra: string[]): string {
  const h = createHash('sha256');
  for (const e of extra) h.update(`${e}\0`);
  for (const f of INPUTS.flatMap(files)) h.update(`${f}\0`).update(readFileSync(join(ROOT, f))).update('\0');
  return h.digest('hex').slice(0, 16);
}

async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** Reproducible tar of `dir` (root-owned, mtime 0, sorted) — one image layer. */
function tarLayer(dir: string, out: string): void {
  run('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '--format=gnu', '-C', dir, '-cf', out, '.']);
}

/** The esi image's config: Dockerfile.webhook's final USER, WORKDIR, ENV, ENTRYPOINT and CMD. */
export const ESI_IMAGE_CONFIG: ImageSpec['config'] = {
  User: `${UID}:${UID}`, WorkingDir: '/app',
  Env: ['NODE_ENV=production', 'PATH=/nodejs/bin'],
  Entrypoint: ['/nodejs/bin/node', '/app/bin/esi.js'], Cmd: ['--help'],
};

interface ImageSpec {
  name: string;
  layers: string[];
  config: { User: string; WorkingDir?: string; Env: string[]; Entrypoint: string[]; Cmd?: string[] };
}

/** Writes an OCI image layout for `spec` and archives it to `out` (what `ctr images
 *  import` reads; the io.containerd.image.name annotation names the image). */
async function writeOciArchive(spec: ImageSpec, work: string, out: string): Promise<void> {
  const layout = join(work, 'layout');
  const blobs = join(layout, 'blobs', 'sha256');
  rmSync(layout, { recursive: true, force: true });
  mkdirSync(blobs, { recursive: true });
  const blob = (content: Buffer | string) => {
    const digest = createHash('sha256').update(content).digest('hex');
    writeFileSync(join(blobs, digest), content);
    return { digest: `sha256:${digest}`, size: Buffer.byteLength(content) };
  };
  const layers = [];
  for (const layer of spec.layers) {
    const digest = await sha256File(layer);
    renameSync(layer, join(blobs, digest));
    layers.push({ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: `sha256:${digest}`, size: statSync(join(blobs, digest)).size });
  }
  const config = blob(JSON.stringify({
    architecture: 'amd64', os: 'linux', config: spec.config,
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.digest) },
  }));
  const manifest = blob(JSON.stringify({
    schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config }, layers,
  }));
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(join(layout, 'index.json'), JSON.stringify({
    schemaVersion: 2,
    manifests: [{
      mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest,
      platform: { architecture: 'amd64', os: 'linux' },
      annotations: { 'io.containerd.image.name': spec.name, 'org.opencontainers.image.ref.name': spec.name.split(':').pop() },
    }],
  }));
  run('tar', ['--owner=0', '--group=0', '--numeric-owner', '-C', layout, '-cf', `${out}.tmp`, '.']);
  renameSync(`${out}.tmp`, out);
}

/** The pinned node binary, the shared libraries it links and a minimal /etc. */
function runtimeRootfs(dir: string): void {
  const node = pinnedNode();
  mkdirSync(join(dir, 'nodejs', 'bin'), { recursive: true });
  copyFileSync(node, join(dir, 'nodejs', 'bin', 'node'));
  chmodSync(join(dir, 'nodejs', 'bin', 'node'), 0o755);
  // `ldd` lines: "libx.so => /lib/.../libx.so (0x…)" and "/lib64/ld-linux-x86-64.so.2 (0x…)".
  for (const m of run('ldd', [node]).matchAll(/(\/\S+) \(0x/g)) {
    const lib = m[1]!;
    mkdirSync(join(dir, dirname(lib)), { recursive: true });
    copyFileSync(lib, join(dir, lib)); // follows symlinks: the real file under the link's name
  }
  mkdirSync(join(dir, 'etc'), { recursive: true });
  writeFileSync(join(dir, 'etc', 'passwd'), `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${UID}:${UID}:nonroot:/home/nonroot:/sbin/nologin\n`);
  writeFileSync(join(dir, 'etc', 'group'), `root:x:0:\nnonroot:x:${UID}:\n`);
  mkdirSync(join(dir, 'tmp'));
  chmodSync(join(dir, 'tmp'), 0o1777);
  mkdirSync(join(dir, 'home', 'nonroot'), { recursive: true });
  run('chown', [`${UID}:${UID}`, join(dir, 'home', 'nonroot')]);
}

/** /app as Dockerfile.webhook lays it out. */
function appRootfs(dir: string): void {
  const app = join(dir, 'app');
  mkdirSync(join(app, 'bin'), { recursive: true });
  for (const f of ['package.json', 'package-lock.json']) copyFileSync(join(ROOT, f), join(app, f));
  copyFileSync(join(ROOT, 'bin', 'esi.js'), join(app, 'bin', 'esi.js'));
  cpSync(join(ROOT, 'charts', 'esi', 'files', 'crds'), join(app, 'charts', 'esi', 'files', 'crds'), { recursive: true });
  log('compiling dist/ (tsc -p tsconfig.build.json)');
  run(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json', '--outDir', join(app, 'dist')]);
  log('installing production dependencies (npm ci --omit=dev, from the lockfile)');
  run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--cache', join(cacheDir(), 'npm')], app,
    { ...process.env, npm_config_update_notifier: 'false' });
  // After the install: the bundle takes each package from this /app's node_modules.
  log('bundling dist/bundle (scripts/bundle.ts), which bin/esi.js runs');
  run(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'bundle.ts'), '--dist', join(app, 'dist')]);
  rmSync(join(app, 'package-lock.json'));
  // The Go template engine, where Dockerfile.webhook's gotemplate stage puts it (the same
  // sources and flags: scripts/build-go-template-engine.sh).
  log('Go template engine (scripts/build-go-template-engine.sh)');
  const engine = run('bash', [join(ROOT, 'scripts', 'build-go-template-engine.sh')]).trim().split('\n').pop()!;
  mkdirSync(join(app, 'dist', 'gotemplate'), { recursive: true });
  copyFileSync(join(engine, 'engine.wasm'), join(app, 'dist', 'gotemplate', 'engine.wasm'));
}

/** Keeps the 3 newest archives of a kind (other checkouts may still use recent ones). */
function pruneOld(images: string, prefix: string, keep: string): void {
  const old = readdirSync(images).filter((f) => f.startsWith(prefix) && f.endsWith('.tar')).map((f) => join(images, f))
    .filter((f) => f !== keep).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs).slice(2);
  for (const f of old) rmSync(f, { force: true });
}

async function buildEsiImage(images: string): Promise<string> {
  const nodeVersion = `v${pinned('NODE_VERSION')}`;
  const out = join(images, `esi-${inputHash([nodeVersion])}.tar`);
  if (existsSync(out)) return out;
  const started = Date.now();
  const work = `${out}.work`;
  // Builders hold the machine-wide lock: any work directory left is from a killed build.
  for (const f of readdirSync(images)) if (f.endsWith('.work')) rmSync(join(images, f), { recursive: true, force: true });
  const [runtime, app] = [join(work, 'runtime'), join(work, 'app')];
  mkdirSync(runtime, { recursive: true });
  mkdirSync(app, { recursive: true });
  runtimeRootfs(runtime);
  appRootfs(app);
  tarLayer(runtime, join(work, 'runtime.tar'));
  tarLayer(app, join(work, 'app.tar'));
  await writeOciArchive({ name: ESI_IMAGE, layers: [join(work, 'runtime.tar'), join(work, 'app.tar')], config: ESI_IMAGE_CONFIG }, work, out);
  rmSync(work, { recursive: true, force: true });
  pruneOld(images, 'esi-', out);
  log(`${ESI_IMAGE} built in ${Math.round((Date.now() - started) / 1000)}s: ${out}`);
  return out;
}

async function buildPauseImage(images: string): Promise<string> {
  const src = join(import.meta.dirname, 'pause');
  const h = createHash('sha256');
  for (const f of ['main.go', 'go.mod']) h.update(readFileSync(join(src, f)));
  const out = join(images, `pause-${h.digest('hex').slice(0, 16)}.tar`);
  if (existsSync(out)) return out;
  const work = `${out}.work`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'rootfs'), { recursive: true });
  const cache = cacheDir();
  run('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', join(work, 'rootfs', 'pause'), '.'], src, {
    ...process.env, CGO_ENABLED: '0', GOCACHE: join(cache, 'go', 'build'), GOMODCACHE: join(cache, 'go', 'mod'), GOFLAGS: '-mod=mod',
  });
  tarLayer(join(work, 'rootfs'), join(work, 'layer.tar'));
  await writeOciArchive({ name: PAUSE_IMAGE, layers: [join(work, 'layer.tar')], config: { User: '65535:65535', Env: [], Entrypoint: ['/pause'] } }, work, out);
  rmSync(work, { recursive: true, force: true });
  log(`${PAUSE_IMAGE} built: ${out}`);
  return out;
}

/** Builds (or finds) both archives. One builder at a time per machine (flock). */
export async function ensureImages(): Promise<{ esi: string; pause: string }> {
  const images = join(cacheDir(), 'images');
  mkdirSync(images, { recursive: true });
  // Serialise concurrent builders through flock(1) on a lock file: re-run ourselves under it.
  if (!process.env.ESI_IMAGES_LOCKED) {
    let out: string[];
    try {
      out = execFileSync('flock', [join(images, '.lock'), process.execPath, ...process.execArgv, import.meta.filename], {
        env: { ...process.env, ESI_IMAGES_LOCKED: '1' }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 900_000, maxBuffer: 16 << 20,
      }).toString().trim().split('\n');
    } catch (err) {
      const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim().split('\n').slice(-25).join('\n');
      throw new Error(`building the node images failed (test/platform/images/build-images.ts):\n${stderr}`, { cause: err });
    }
    return { esi: out[0]!, pause: out[1]! };
  }
  return { esi: await buildEsiImage(images), pause: await buildPauseImage(images) };
}

if (process.argv[1] === import.meta.filename) {
  const { esi, pause } = await ensureImages();
  process.stdout.write(`${esi}\n${pause}\n`);
}

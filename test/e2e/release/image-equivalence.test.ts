// The image the test node runs (test/platform/images/build-images.ts, an OCI archive built
// without an image builder) and the image the release builds from Dockerfile.webhook are one
// recipe in two forms. Nothing here can run `docker build`, so this test holds them together:
// the built archive is read back (config, and every layer's file list) and compared with what
// the Dockerfile's final stage declares — user, working directory, environment, entry point,
// command, every file it copies, Node.js at /nodejs/bin/node of the one pinned version, files
// root-owned. The pinned versions (test/platform/versions.env) are the Dockerfiles' defaults and
// what the release workflow passes. docs/decisions/0084-release-and-images.md.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { parse } from 'yaml';
import { pinned } from '../../support/platform/binaries.js';
import { ensureImages } from '../../platform/images/build-images.js';
import { copies, execForm, parseDockerfile, type Stage } from '../../support/dockerfile.js';
import { ROOT } from '../../support/helm.js';

const exec = promisify(execFile);
// The first build of a tree compiles and packs the image: minutes on a loaded 2-core machine.
t.setTimeout(900_000);

const read = (p: string) => readFile(join(ROOT, p), 'utf8');
const NODE_VERSION = pinned('NODE_VERSION');
const GO_VERSION = pinned('GO_VERSION');

t.test('one Node.js and one Go version: versions.env, the Dockerfiles\' defaults, the release', async (t) => {
  for (const f of ['Dockerfile.webhook', 'Dockerfile.agent']) {
    const d = parseDockerfile(await read(f));
    t.equal(d.globalArgs.NODE_VERSION, NODE_VERSION, `${f}: ARG NODE_VERSION defaults to versions.env's`);
    t.equal(d.globalArgs.GO_VERSION, GO_VERSION, `${f}: ARG GO_VERSION defaults to versions.env's`);
    t.equal(d.stages.find((s) => s.name === 'deps')?.from, `node:${NODE_VERSION}-bookworm-slim`, `${f}: the node binary's stage`);
    t.equal(d.stages.find((s) => s.name === 'gotemplate')?.from, `golang:${GO_VERSION}-bookworm`, `${f}: the engine's stage`);
  }
  const wf = parse(await read('.github/workflows/release.yml')) as {
    jobs: Record<string, { steps: { id?: string; run?: string; with?: Record<string, string> }[] }>;
  };
  const pins = wf.jobs.version!.steps.find((s) => s.id === 'v')?.run ?? '';
  t.match(pins, /echo "node=\$\(pin NODE_VERSION\)"/, 'the release reads NODE_VERSION from versions.env');
  t.match(pins, /test\/platform\/versions\.env/);
  const build = wf.jobs.images!.steps.find((s) => s.id === 'build')?.with ?? {};
  t.match(build['build-args'], /^NODE_VERSION=\$\{\{ needs\.version\.outputs\.node \}\}$/m, 'and passes it to both image builds');
  t.match(build['build-args'], /^GO_VERSION=\$\{\{ needs\.version\.outputs\.go \}\}$/m);
  const setup = wf.jobs.test!.steps.find((s) => s.with?.['node-version'])?.with?.['node-version'];
  t.equal(setup, '${{ needs.version.outputs.node }}', 'the release\'s test job runs on it too');
});

interface OciConfig { config: { User: string; WorkingDir: string; Env: string[]; Entrypoint: string[]; Cmd: string[] } }

/** The archive's image config and, per layer, `tar -tv` lines. */
async function readArchive(archive: string): Promise<{ config: OciConfig; layers: string[][] }> {
  const blob = async (digest: string) => (await exec('tar', ['-xOf', archive, `./blobs/sha256/${digest.replace('sha256:', '')}`], { maxBuffer: 1 << 30, encoding: 'buffer' })).stdout;
  const index = JSON.parse((await exec('tar', ['-xOf', archive, './index.json'])).stdout) as { manifests: { digest: string }[] };
  const manifest = JSON.parse(String(await blob(index.manifests[0]!.digest))) as { config: { digest: string }; layers: { digest: string }[] };
  const config = JSON.parse(String(await blob(manifest.config.digest))) as OciConfig;
  const layers: string[][] = [];
  for (const l of manifest.layers) {
    const { stdout } = await exec('sh', ['-c', 'tar -xOf "$1" "$2" | tar --numeric-owner -tvf -', 'sh', archive, `./blobs/sha256/${l.digest.replace('sha256:', '')}`], { maxBuffer: 256 << 20 });
    layers.push(stdout.split('\n').filter(Boolean));
  }
  return { config, layers };
}

/** Dockerfile instruction arguments of the final stage, by command. */
const args = (s: Stage, cmd: string) => s.instructions.filter((i) => i.cmd === cmd).map((i) => i.args);

t.test('the node-test image is laid out as Dockerfile.webhook\'s final stage', async (t) => {
  const { esi } = await ensureImages();
  const { config: { config }, layers } = await readArchive(esi);
  const last = parseDockerfile(await read('Dockerfile.webhook')).stages.at(-1)!;
  t.equal(config.User, args(last, 'USER').at(-1), `USER ${config.User}`);
  t.equal(config.WorkingDir, args(last, 'WORKDIR').at(-1), `WORKDIR ${config.WorkingDir}`);
  t.same(config.Entrypoint, execForm(last, 'ENTRYPOINT'), `ENTRYPOINT ${JSON.stringify(config.Entrypoint)}`);
  t.same(config.Cmd, execForm(last, 'CMD'), `CMD ${JSON.stringify(config.Cmd)}`);
  for (const env of args(last, 'ENV').flatMap((e) => e.split(/\s+/))) t.ok(config.Env.includes(env), `ENV ${env}`);

  // path -> "uid/gid" of every entry of every layer (./app/x → /app/x).
  const owners = new Map<string, string>();
  for (const line of layers.flat()) {
    const m = /^\S+\s+(\d+\/\d+)\s+\d+\s+\S+\s+\S+\s+\.(\/.*?)\/?(?: -> .*)?$/.exec(line);
    if (m) owners.set(m[2]!, m[1]!);
  }
  const has = (p: string) => owners.has(p);
  for (const c of copies(last)) {
    const dest = posix.resolve(config.WorkingDir, c.dest).replace(/\/$/, '');
    t.ok(has(dest), `COPY ${c.from ? `--from=${c.from} ` : ''}${c.sources.join(' ')} → ${dest}: in the image`);
    t.equal(owners.get(dest), '0/0', `${dest} is root-owned (the process cannot modify its own code)`);
  }
  for (const f of (await readdir(join(ROOT, 'charts/esi/files/crds'))).filter((x) => x.endsWith('.yaml'))) {
    t.ok(has(`/app/charts/esi/files/crds/${f}`), `CRD ${f}`);
  }
  for (const p of ['/app/dist/bundle/esi.mjs', '/app/dist/bundle/agent/esi.mjs', '/app/dist/gotemplate/engine.wasm', '/app/node_modules/@kubernetes/client-node/package.json']) {
    t.ok(has(p), `${p}: what bin/esi.js and the agent load`);
  }
  t.notOk([...owners.keys()].some((p) => /^\/(bin|usr\/bin)\/(sh|bash)$/.test(p)), 'no shell');
  t.notOk([...owners.keys()].some((p) => /\/(npm|apt-get|dpkg)$/.test(p)), 'no package manager');

  // Node.js: the image's own binary, run here (this Debian 12 machine has its libraries).
  const dir = await mkdtemp(join(tmpdir(), 'esi-image-node-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const runtime = layers.findIndex((l) => l.some((x) => / \.\/nodejs\/bin\/node$/.test(x)));
  t.ok(runtime >= 0, 'node at /nodejs/bin/node');
  const index = JSON.parse((await exec('tar', ['-xOf', esi, './index.json'])).stdout) as { manifests: { digest: string }[] };
  const manifest = JSON.parse((await exec('tar', ['-xOf', esi, `./blobs/sha256/${index.manifests[0]!.digest.slice(7)}`])).stdout) as { layers: { digest: string }[] };
  await exec('sh', ['-c', 'tar -xOf "$1" "$2" | tar -xf - -C "$3" ./nodejs/bin/node', 'sh', esi, `./blobs/sha256/${manifest.layers[runtime]!.digest.slice(7)}`, dir]);
  const { stdout: version } = await exec(join(dir, 'nodejs/bin/node'), ['--version']);
  t.equal(version.trim(), `v${NODE_VERSION}`, `the image's node is the pinned v${NODE_VERSION}, as the published images' (node:${NODE_VERSION}-bookworm-slim's)`);
});

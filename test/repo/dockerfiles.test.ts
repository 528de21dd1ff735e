// Dockerfile.webhook and Dockerfile.agent, checked without a Docker engine (none on the
// build machine): the recipes (stages, distroless non-root final image, exec-form entry
// point, lockfile-exact production installs), the build context (.dockerignore keeps
// what the COPYs need), the agent's import graph against what Dockerfile.agent prunes,
// and finally each image's /app assembled the way the recipe does and run with node.
import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import t from 'tap';
import { fakeConfig } from '../support/fixtures/agent.js';
import { copies, dockerignore, execForm, parseDockerfile, productionClosure, stageArg, type Dockerfile, type Stage } from '../support/dockerfile.js';
import { walk } from '../support/imports.js';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');
const pkg = JSON.parse(read('package.json')) as { version: string; dependencies: Record<string, string> };
const DISTROLESS = /^gcr\.io\/distroless\/cc-debian\d+(:nonroot)?(@sha256:[a-f0-9]{64})?$/;
const ENTRYPOINT = ['/nodejs/bin/node', '/app/bin/esi.js'];
const excluded = dockerignore(read('.dockerignore'));
const recipes: Record<'webhook' | 'agent', Dockerfile> = {
  webhook: parseDockerfile(read('Dockerfile.webhook')),
  agent: parseDockerfile(read('Dockerfile.agent')),
};
const finalStage = (d: Dockerfile): Stage => d.stages.at(-1)!;
const stage = (d: Dockerfile, name: string): Stage => {
  const s = d.stages.find((x) => x.name === name);
  if (!s) throw new Error(`no stage ${name}`);
  return s;
};
const runs = (s: Stage) => s.instructions.filter((i) => i.cmd === 'RUN').map((i) => i.args);
const prune = (stageArg(stage(recipes.agent, 'deps'), 'AGENT_PRUNE') ?? '').split(/\s+/).filter(Boolean);

for (const [name, recipe] of Object.entries(recipes)) {
  t.test(`Dockerfile.${name}: the recipe`, async (t) => {
    const last = finalStage(recipe);
    t.match(last.from, DISTROLESS, 'final image is distroless (glibc, libstdc++): no shell, no package manager');
    t.ok(copies(last).some((c) => c.from === 'deps' && c.sources[0] === '/usr/local/bin/node' && c.dest === '/nodejs/bin/node'),
      'Node.js: the node image\'s binary (NODE_VERSION, target platform) at /nodejs/bin/node');
    t.match(stage(recipe, 'deps').from, /^node:\d+\.\d+\.\d+-bookworm-slim$/, 'from node:<NODE_VERSION>, an exact release');
    t.notOk(last.instructions.some((i) => i.cmd === 'RUN'), 'nothing runs in the final stage (there is no shell)');
    const user = last.instructions.filter((i) => i.cmd === 'USER').at(-1)?.args;
    t.equal(user, '65532:65532', 'numeric non-root USER (runAsNonRoot can verify it)');
    t.same(execForm(last, 'ENTRYPOINT'), ENTRYPOINT, 'exec-form entry point, node by absolute path');
    t.same(execForm(last, 'CMD'), name === 'agent' ? ['agent'] : ['--help']);
    t.ok(runs(stage(recipe, 'build')).some((r) => /^npm ci\b/.test(r)), 'build stage installs from the lockfile');
    t.ok(runs(stage(recipe, 'build')).includes('npm run build'), 'and compiles with the project build script');
    t.ok(runs(stage(recipe, 'deps')).some((r) => /^npm ci --omit=dev\b/.test(r)), 'runtime dependencies: npm ci --omit=dev');
    for (const s of ['build', 'deps']) {
      const first = copies(stage(recipe, s))[0];
      t.same(first?.sources, ['package.json', 'package-lock.json'], `${s}: manifests copied before npm ci (layer cache)`);
    }
    const finalCopies = copies(last);
    t.ok(finalCopies.some((c) => !c.from && c.sources.includes('bin/esi.js') && c.dest === './bin/esi.js'), 'bin/esi.js → /app/bin/esi.js');
    t.ok(finalCopies.some((c) => !c.from && c.sources.includes('package.json')), 'package.json in /app (esi version, package root)');
    t.ok(finalCopies.some((c) => c.from === 'deps' && c.sources[0] === '/app/node_modules'), 'node_modules from the deps stage');
  });

  t.test(`Dockerfile.${name}: every COPY source exists and survives .dockerignore`, async (t) => {
    for (const s of recipe.stages) {
      for (const c of copies(s).filter((x) => !x.from)) {
        for (const src of c.sources) {
          const p = src.replace(/\/$/, '');
          t.ok(existsSync(join(ROOT, p)), `${src} exists (line ${c.line})`);
          t.notOk(excluded(p), `${src} is not excluded by .dockerignore`);
        }
      }
    }
  });
}

t.test('.dockerignore keeps test state, caches and key material out of the context', async (t) => {
  for (const p of ['node_modules', 'dist/src/cli/main.js', '.git/config', '.esi-run/platform/state.json', 'test/e2e/chart/chart.test.ts', 'webhook/x.test.ts', 'tls.key', 'certs/dev.pem', '.env']) {
    t.ok(excluded(p), `${p} excluded`);
  }
  for (const p of ['src/cli/main.ts', 'webhook/server.ts', 'certs/pki.ts', 'bin/esi.js', 'scripts/bundle.ts', 'package-lock.json', 'charts/esi/files/crds/external-secrets.io_secretstores.yaml']) t.notOk(excluded(p), `${p} kept`);
});

t.test('bin/esi.js loads the bundle that npm run build makes of the compiled CLI', async (t) => {
  t.match(read('bin/esi.js'), /import\('\.\.\/dist\/bundle\/esi\.mjs'\)/);
  t.match(read('bin/esi.js'), /import\('\.\.\/dist\/bundle\/agent\/esi\.mjs'\)/, '`esi agent`: the agent\'s own bundle (scripts/bundle.ts, agentOnly)');
  const build = JSON.parse(read('tsconfig.build.json')) as { extends: string };
  const base = JSON.parse(read(build.extends)) as { compilerOptions: { rootDir: string; outDir: string } };
  t.same([base.compilerOptions.rootDir, base.compilerOptions.outDir], ['.', 'dist'], 'src/cli/main.ts → dist/src/cli/main.js');
  t.match(read('scripts/bundle.ts'), /entryPoints: \{ esi: join\(dist, 'src', 'cli', 'main\.js'\), 'render-worker': join\(dist, 'src', 'templating', 'pool', 'worker\.js'\) \}/, 'which scripts/bundle.ts bundles into dist/bundle/esi.mjs (and the render threads\' entry)');
  const pkgScripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
  t.match(pkgScripts.build, /^tsc -p tsconfig\.build\.json && .*scripts\/bundle\.ts$/, 'npm run build: tsc, then the bundle');
  const agentFinal = copies(finalStage(recipes.agent)).filter((c) => c.from === 'build').map((c) => c.sources[0]);
  t.same(agentFinal.sort(), ['/src/dist/bundle'], 'agent image: the bundle only');
});

t.test('the agent never imports what Dockerfile.agent prunes', async (t) => {
  t.ok(prune.length > 0, `AGENT_PRUNE = ${prune.join(' ')}`);
  for (const p of prune) t.ok(pkg.dependencies[p], `${p} is a runtime dependency (so pruning it means something)`);
  const providers = readdirSync(join(ROOT, 'src/providers'), { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(ROOT, 'src/providers', d.name, 'index.ts')))
    .map((d) => join(ROOT, 'src/providers', d.name, 'index.ts'));
  const main = join(ROOT, 'src/cli/main.ts');
  // The image holds dist/src and dist/injector; main.ts's lazy imports of the other
  // subcommands are not part of the agent.
  const g = walk(ROOT, [main, join(ROOT, 'injector/cmd.ts'), ...providers], ['src', 'injector'], [main]);
  t.ok(g.files.size > 10, `${g.files.size} modules in the agent's graph (providers: ${providers.map((p) => relative(ROOT, p)).join(', ')})`);
  t.same(g.leaving, [], 'no static import of code the agent image lacks (webhook/, certs/)');
  for (const [name, by] of g.packages) {
    t.notOk(prune.includes(name), `${name} (imported by ${by}) is not pruned from the agent image — if it must be, drop it from AGENT_PRUNE in Dockerfile.agent`);
    t.ok(pkg.dependencies[name], `${name} (imported by ${by}) is a runtime dependency`);
  }
});

/**
 * /app as a recipe's final stage assembles it (its COPYs from the context and from the
 * build stage, WORKDIR /app) plus the production node_modules (the lockfile closure, minus `without`). Packages are
 * symlinked and node runs with --preserve-symlinks, so every module resolves inside this
 * /app as it would in the image: a dependency missing from the closure fails to load.
 * Returns the size of node_modules in bytes.
 */
async function assembleImage(dir: string, recipe: Dockerfile, compiled: string, without: string[]): Promise<number> {
  const app = join(dir, 'app');
  for (const c of copies(finalStage(recipe))) {
    if (c.from === 'build') {
      for (const s of c.sources) cpSync(join(compiled, relative('/src/dist', s)), join(app, c.dest), { recursive: true });
    } else if (!c.from) {
      for (const s of c.sources) cpSync(join(ROOT, s), join(app, c.dest), { recursive: true });
    }
  }
  const closure = productionClosure(ROOT, Object.keys(pkg.dependencies).filter((d) => !without.includes(d)));
  let bytes = 0;
  const du = (p: string): number => {
    const st = lstatSync(p);
    return st.isDirectory() ? readdirSync(p).reduce((n, c) => n + du(join(p, c)), 0) : st.size;
  };
  for (const p of closure) {
    if (!existsSync(join(ROOT, p))) continue; // an optional dependency for another platform
    bytes += lstatSync(join(ROOT, p)).isDirectory() ? readdirSync(join(ROOT, p)).filter((c) => c !== 'node_modules').reduce((n, c) => n + du(join(ROOT, p, c)), 0) : 0;
    if (p.split('node_modules/').length !== 2) continue; // nested ones come with their parent
    await mkdir(dirname(join(app, p)), { recursive: true });
    await symlink(join(ROOT, p), join(app, p));
  }
  return bytes;
}

function node(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const clean: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ...env };
    const child = spawn(process.execPath, ['--preserve-symlinks', '--preserve-symlinks-main', ...args], { cwd, env: clean, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (out += d));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

t.test('the images, assembled as the recipes do, run their commands', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'esi-image-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // The build stage: only the COPYed sources (after .dockerignore), built as `npm run build` does (tsc, bundle).
  const ctx = join(dir, 'context');
  for (const c of copies(stage(recipes.webhook, 'build')).filter((x) => !x.from)) {
    for (const src of c.sources) {
      cpSync(join(ROOT, src), join(ctx, src), { recursive: true, filter: (p) => !excluded(relative(ROOT, p) || '.') });
    }
  }
  await symlink(join(ROOT, 'node_modules'), join(ctx, 'node_modules'));
  const tsc = await new Promise<{ code: number; out: string }>((resolve) => {
    execFile(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ctx, maxBuffer: 16 << 20 }, (err, stdout) => {
      resolve({ code: err ? 1 : 0, out: String(stdout) });
    });
  });
  // Type errors are `npm run typecheck`'s job (other work in progress may have some); tsc emits anyway.
  if (tsc.code !== 0) t.comment(`tsc reported type errors (checked by npm run typecheck):\n${tsc.out.split('\n').slice(0, 5).join('\n')}`);
  const compiled = join(ctx, 'dist');
  t.ok(existsSync(join(compiled, 'src/cli/main.js')), 'the build context compiles to dist/src/cli/main.js');
  const bundled = await node(['--import', 'tsx', join(ctx, 'scripts/bundle.ts'), '--dist', compiled], ctx);
  t.equal(bundled.code, 0, `and bundles (scripts/bundle.ts from the context) to dist/bundle: ${bundled.out.slice(0, 500)}`);

  const agentDir = join(dir, 'agent');
  const agentBytes = await assembleImage(agentDir, recipes.agent, compiled, prune);
  const fullDir = join(dir, 'webhook');
  const fullBytes = await assembleImage(fullDir, recipes.webhook, compiled, []);
  t.comment(`node_modules: agent image ${(agentBytes / 2 ** 20).toFixed(1)} MiB, ESI image ${(fullBytes / 2 ** 20).toFixed(1)} MiB`);
  t.ok(agentBytes < fullBytes, 'the agent image carries fewer dependencies');
  for (const p of prune) t.notOk(existsSync(join(agentDir, 'app/node_modules', p)), `${p} is not in the agent image`);

  const agentApp = join(agentDir, 'app');
  const version = await node([...ENTRYPOINT.slice(1).map((p) => p.replace('/app', agentApp)), 'version'], agentApp);
  t.equal(version.code, 0, version.out);
  t.match(version.out, `esi ${pkg.version}`);
  const root = join(dir, 'pod');
  await mkdir(root);
  await writeFile(join(dir, 'config.json'), JSON.stringify(fakeConfig({ mode: 'init-only' })));
  const agent = await node([join(agentApp, 'bin/esi.js'), 'agent', '--root', root, '--config-file', join(dir, 'config.json')], agentApp);
  t.equal(agent.code, 0, `esi agent (init-only, fake store) in the agent image: ${agent.out}`);
  t.ok((await readFile(join(root, 'var/run/esi/secrets/app.conf'), 'utf8')).startsWith('url=postgres://app_user:'), 'rendered its files');

  const fullApp = join(fullDir, 'app');
  for (const cmd of [['webhook', '--help'], ['agent', '--help'], ['--help']]) {
    const r = await node([join(fullApp, 'bin/esi.js'), ...cmd], fullApp);
    t.equal(r.code, 0, `ESI image: esi ${cmd.join(' ')}: ${r.out.slice(0, 300)}`);
  }
  const crds = await node(['--input-type=module', '-e', `import { loadCrds } from '${join(fullApp, 'dist/src/api/crds.js')}'; console.log((await loadCrds()).length);`], fullApp);
  const shipped = readdirSync(join(ROOT, 'charts/esi/files/crds')).filter((f) => f.endsWith('.yaml')).length;
  t.equal(crds.out.trim(), String(shipped), `ESI image: every CRD manifest of the chart loads from the image (${crds.out.trim()})`);
});

// The release workflow (.github/workflows/release.yml) and the chart agree: the images it
// builds are the ones a default `helm install` runs, from the Dockerfiles that exist, with the
// one version package.json and Chart.yaml name; a chart packaged from the repository renders
// pods with exactly those image references.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { parse } from 'yaml';
import type { deploymentOf } from '../support/helm.js';
import { CHART, findHelm, Helm, KUBE_VERSION, parseManifests, ROOT } from '../support/helm.js';

interface Workflow {
  on: { push: { tags: string[] } };
  env: Record<string, string>;
  jobs: Record<string, { needs?: string | string[]; strategy?: { matrix: { include: { dockerfile: string; image: string }[] } }; steps: { id?: string; uses?: string; run?: string; with?: Record<string, unknown> }[] }>;
}

const workflow = parse(readFileSync(join(ROOT, '.github/workflows/release.yml'), 'utf8')) as Workflow;
const values = parse(readFileSync(join(ROOT, 'charts/esi/values.yaml'), 'utf8')) as { image: { repository: string; tag: string } };
const chart = parse(readFileSync(join(ROOT, 'charts/esi/Chart.yaml'), 'utf8')) as { version: string; appVersion: string };
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const built = workflow.jobs.images!.strategy!.matrix.include;
const exec = promisify(execFile);

t.test('one version: package.json, the chart version and appVersion', async (t) => {
  t.equal(chart.version, pkg.version);
  t.equal(chart.appVersion, pkg.version);
  t.same(workflow.on.push.tags, ['v*.*.*']);
  const check = workflow.jobs.version!.steps.map((s) => s.run ?? '').join('\n');
  t.match(check, /package\.json/, 'the workflow refuses a tag that disagrees with package.json');
  t.match(check, /Chart\.yaml/, '... and with Chart.yaml');
});

t.test('the images the workflow builds are the chart defaults, from Dockerfiles that exist', async (t) => {
  for (const b of built) t.ok(existsSync(join(ROOT, b.dockerfile)), `${b.dockerfile} exists`);
  t.same(built.map((b) => b.dockerfile).sort(), ['Dockerfile.agent', 'Dockerfile.webhook']);
  const webhookImage = built.find((b) => b.dockerfile === 'Dockerfile.webhook')!.image;
  t.equal(webhookImage, values.image.repository, 'values.yaml image.repository is what Dockerfile.webhook is pushed as');
  t.equal(values.image.tag, '', 'the tag defaults to appVersion, the version the workflow pushes');
  const agentImage = built.find((b) => b.dockerfile === 'Dockerfile.agent')!.image;
  t.match(readFileSync(join(ROOT, 'docs/install.md'), 'utf8'), `\`${agentImage}\``, 'install.md names the agent image as pushed');
  t.equal(workflow.env.IMAGE, webhookImage);
  t.equal(workflow.env.AGENT_IMAGE, agentImage);
  const build = workflow.jobs.images!.steps.find((s) => s.uses?.startsWith('docker/build-push-action@'))?.with ?? {};
  t.equal(build.platforms, 'linux/amd64,linux/arm64', 'multi-arch: amd64 and arm64');
  t.equal(build.provenance, 'mode=max', 'with provenance');
  t.equal(build.sbom, true, 'and an SBOM');
  const signs = workflow.jobs.images!.steps.map((s) => s.run ?? '').join('\n');
  t.match(signs, /cosign sign --yes --recursive "\$REF"/, 'signed by digest, keyless (every platform\'s image too)');
  t.match(signs, /cosign verify "\$REF" --certificate-identity-regexp "\$SIGNER"/, 'and the signature verified against this workflow\'s identity');
  t.equal((workflow.jobs.images as { permissions?: Record<string, string> }).permissions?.['id-token'], 'write', 'keyless signing needs the job\'s OIDC token');
  t.same([workflow.jobs.chart!.needs].flat(), ['version', 'images'], 'the chart is pushed after its images');
  const chartSteps = workflow.jobs.chart!.steps.map((s) => s.run ?? '');
  const check = chartSteps.findIndex((r) => r.includes('imagetools inspect'));
  const push = chartSteps.findIndex((r) => r.includes('helm push'));
  t.ok(check >= 0 && check < push, 'before helm push, the chart job checks that the images it defaults to exist');
  t.match(chartSteps[check], /for ref in "\$IMAGE:\$VERSION" "\$AGENT_IMAGE:\$VERSION"/, '... both, at the version pushed');
  t.match(chartSteps[check], /linux\/amd64 linux\/arm64/, '... for both platforms');
  t.match(chartSteps[check], /cosign verify/, '... and signed');
  t.match(chartSteps[push], /cosign sign --yes "\$\{CHART_REPO#oci:\/\/\}\/esi@\$digest"/, 'the chart is signed too');
});

t.test('the version job reads the pins the tests use', async (t) => {
  // The version job's own commands, run here: they must find what the platform scripts pin.
  const run = workflow.jobs.version!.steps.find((s) => s.id === 'v')!.run!;
  const pin = (name: string) => /^ *pin\(\) \{ (.*); \}$/m.exec(run)![1]!.replace('$1', name);
  t.match(run, /^ *pin\(\) \{ sed -n "s\/\^\$1=\/\/p" test\/platform\/versions\.env; \}$/m);
  for (const [name, want] of [['NODE_VERSION', /^\d+\.\d+\.\d+$/], ['GO_VERSION', /^\d+\.\d+\.\d+$/]] as const) {
    const { stdout } = await exec('sh', ['-c', pin(name)], { cwd: ROOT });
    t.match(stdout.trim(), want, `${name}: ${stdout.trim()}`);
  }
  const helmLine = /^ *echo "helm=\$\((.*)\)"$/m.exec(run)![1]!;
  const { stdout: helm } = await exec('sh', ['-c', helmLine], { cwd: ROOT });
  t.equal(helm.trim(), /HELM_VERSION=\$\{HELM_VERSION:-(\S+)\}/.exec(readFileSync(join(ROOT, 'test/platform/build-helm.sh'), 'utf8'))![1], `helm ${helm.trim()}, as test/platform/build-helm.sh builds it`);
});

t.test('the test job runs where the test platform works', async (t) => {
  const job = workflow.jobs.test as Workflow['jobs'][string] & { container?: { image: string; options?: string } };
  t.equal(job.container?.image, 'debian:12', 'Debian 12, the distribution the pinned packages are for');
  t.match(job.container?.options ?? '', /--privileged/, 'privileged: the test node needs network namespaces, mounts and cgroups');
  const runs = job.steps.map((s) => s.run ?? '');
  t.ok(runs.includes('bash test/platform/runner-packages.sh'), 'the packages a bare debian:12 lacks, pinned');
  t.ok(existsSync(join(ROOT, 'test/platform/runner-packages.sh')));
  t.ok(runs.includes('bash .ci/run'), 'the same entry point as CI');
});

t.test('a chart packaged as the release does renders pods that run the pushed images', async (t) => {
  const helm = await findHelm();
  if (!helm.path) return t.plan(0, `helm is not available: ${helm.reason}`);
  const h = new Helm(helm.path);
  const dir = await mkdtemp(join(tmpdir(), 'esi-package-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const pkgd = await h.run(['package', CHART, '--version', pkg.version, '--app-version', pkg.version, '--destination', dir]);
  t.equal(pkgd.code, 0, `helm package: ${pkgd.stdout}${pkgd.stderr}`);
  const tgz = join(dir, `esi-${pkg.version}.tgz`);
  t.ok(existsSync(tgz), `esi-${pkg.version}.tgz, the name the workflow pushes`);
  const r = await h.run(['template', 'esi', tgz, '--namespace', 'esi-system', '--kube-version', KUBE_VERSION]);
  t.equal(r.code, 0, r.stderr);
  const objs = parseManifests(r.stdout);
  const want = `${values.image.repository}:${pkg.version}`;
  const images = objs.filter((o) => o.kind === 'Deployment').flatMap((d) => (d as ReturnType<typeof deploymentOf>).spec.template.spec.containers.map((c) => c.image));
  t.ok(images.length >= 2, `the webhook and controller Deployments: ${images.join(', ')}`);
  for (const image of images) t.equal(image, want);
  const webhook = objs.find((o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] !== 'controller') as ReturnType<typeof deploymentOf>;
  const args = webhook.spec.template.spec.containers[0]!.args ?? [];
  t.ok(args.includes(`--agent-image=${want}`) || args.join(' ').includes(want), `the injected agent runs ${want} too: ${args.join(' ')}`);
});

// The release workflow (.github/workflows/release.yml) and the chart agree: the images it
// builds are the ones a default `helm install` runs, from the Dockerfiles that exist, with the
// one version package.json and Chart.yaml name; a chart packaged from the repository renders
// pods with exactly those image references.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import type { deploymentOf} from './helm.js';
import { findHelm, Helm, ROOT } from './helm.js';

interface Workflow {
  on: { push: { tags: string[] } };
  env: Record<string, string>;
  jobs: Record<string, { needs?: string | string[]; strategy?: { matrix: { include: { dockerfile: string; image: string }[] } }; steps: { uses?: string; run?: string; with?: Record<string, unknown> }[] }>;
}

const workflow = parse(readFileSync(join(ROOT, '.github/workflows/release.yml'), 'utf8')) as Workflow;
const values = parse(readFileSync(join(ROOT, 'charts/esi/values.yaml'), 'utf8')) as { image: { repository: string; tag: string } };
const chart = parse(readFileSync(join(ROOT, 'charts/esi/Chart.yaml'), 'utf8')) as { version: string; appVersion: string };
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const built = workflow.jobs.images!.strategy!.matrix.include;

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
  t.ok(workflow.jobs.images!.steps.some((s) => String(s.with?.platforms ?? '').includes('linux/arm64')), 'multi-arch');
  t.same([workflow.jobs.chart!.needs].flat(), ['version', 'images'], 'the chart is pushed after its images');
});

t.test('a chart packaged from the repository renders pods that run the pushed images', async (t) => {
  const helm = await findHelm();
  if (!helm.path) return t.plan(0, `helm is not available: ${helm.reason}`);
  const objs = await new Helm(helm.path).template('esi', 'esi-system');
  const want = `${values.image.repository}:${pkg.version}`;
  const images = objs.filter((o) => o.kind === 'Deployment').flatMap((d) => (d as ReturnType<typeof deploymentOf>).spec.template.spec.containers.map((c) => c.image));
  t.ok(images.length >= 2, `the webhook and controller Deployments: ${images.join(', ')}`);
  for (const image of images) t.equal(image, want);
  const webhook = objs.find((o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] !== 'controller') as ReturnType<typeof deploymentOf>;
  const args = webhook.spec.template.spec.containers[0]!.args ?? [];
  t.ok(args.includes(`--agent-image=${want}`) || args.join(' ').includes(want), `the injected agent runs ${want} too: ${args.join(' ')}`);
});

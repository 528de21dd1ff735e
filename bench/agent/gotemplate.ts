// `npm run bench:agent:gotemplate`: what one ESO Go template costs an agent. The init-only
// agent (compiled JS, `node bin/esi.js agent`, fake store) is run A/B interleaved: without a
// template, and with one ESO-style Go template (src/templating/go/, the only engine:
// docs/decisions/0087-templating-engines.md). Wall time (spawn → exit) and peak RSS come from
// /usr/bin/time. Results go to docs/performance/go-templates-agent.md.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { AgentConfig } from '../../src/agent-config/types.js';
import { machineInfo, machineMarkdown } from '../lib/machine.js';
import { markdownTable, textTable } from '../lib/markdown.js';
import { agentNode, imageNode } from '../lib/node.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'esi.js');
const { values: opts } = parseArgs({ options: { runs: { type: 'string', default: '7' }, 'no-write': { type: 'boolean' }, 'no-build': { type: 'boolean' } } });

/** ESO's documented shape: a config file built from the fetched keys (quote, printf, b64enc, if/range). */
const TEMPLATE = {
  engineVersion: 'v2',
  data: {
    'config.yaml':
      'user: {{ .username | quote }}\npassword: {{ .password | quote }}\n' +
      'dsn: {{ printf "postgres://%s:%s@db:5432/app" .username .password | b64enc }}\n' +
      '{{- if .region }}\nregion: {{ .region | upper }}{{ end }}\n' +
      'hosts:{{ range $i, $h := splitList "," .hosts }}\n  - {{ $i }}: {{ $h | trim }}{{ end }}\n',
  },
};

type Variant = 'none' | 'go-ts';

function config(variant: Variant): AgentConfig {
  const values = { username: 'app', password: 'bench-password-xxxxxxxxxxxxxxxx', region: 'eu-west-1', hosts: 'db-0, db-1, db-2' };
  return {
    version: 1, mode: 'init-only', pod: { namespace: 'bench', name: 'bench', serviceAccountName: 'default' },
    outputDir: '/var/run/secrets/esi', fileMode: 0o440, refreshSeconds: 60, port: 0,
    stores: { 'SecretStore/bench/fake': { kind: 'SecretStore', name: 'fake', provider: { fake: { data: Object.entries(values).map(([key, value]) => ({ key, value })) } } } },
    secrets: [{
      name: 'db', store: 'SecretStore/bench/fake', dataFrom: [],
      data: Object.keys(values).map((k) => ({ secretKey: k, remoteRef: { key: k } })),
      ...(variant === 'none' ? {} : { template: TEMPLATE, templateEngine: 'go' as const }),
    }],
    templates: [],
  } as AgentConfig;
}

/** One init-only agent run: wall seconds and peak RSS (MiB), and the rendered file. */
function run(variant: Variant): { wall: number; rss: number; file: string } {
  const root = mkdtempSync(join(tmpdir(), 'esi-bench-gotmpl-'));
  const out = join(root, 'var/run/secrets/esi');
  mkdirSync(out, { recursive: true });
  const env = { PATH: process.env.PATH, ESI_AGENT_CONFIG: JSON.stringify(config(variant)), ESI_LOG_LEVEL: 'warn' };
  const timeFile = join(root, 'time');
  const started = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-o', timeFile, '-f', '%e %M', agentNode(), BIN, 'agent', '--root', root], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    if (r.status !== 0) throw new Error(`agent (${variant}) exited ${r.status}: ${r.stderr}`);
    const wall = Number(process.hrtime.bigint() - started) / 1e9;
    const kib = Number(readFileSync(timeFile, 'utf8').trim().split(/\s+/)[1]);
    const file = variant === 'none' ? '' : readFileSync(join(out, 'db', 'config.yaml'), 'utf8');
    return { wall, rss: kib / 1024, file };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function main(): void {
  if (!opts['no-build'] && spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) throw new Error('npm run build failed');
  const runs = Number(opts.runs);
  const machine = { ...machineInfo(), agentNode: imageNode().version };
  const loadBefore = loadavg().map((l) => l.toFixed(2)).join(' / ');
  const variants: Variant[] = ['none', 'go-ts'];
  variants.forEach((v) => run(v)); // warm the page cache
  const res: Record<Variant, { wall: number[]; rss: number[] }> = { none: { wall: [], rss: [] }, 'go-ts': { wall: [], rss: [] } };
  const ratios = { 'go-ts': { wall: [] as number[], rss: [] as number[] } };
  for (let i = 0; i < runs; i++) {
    // Interleaved, and the order rotated, so load changes hit every variant alike.
    const round = Object.fromEntries(variants.map((_, k) => variants[(k + i) % variants.length]!).map((v) => [v, run(v)])) as Record<Variant, ReturnType<typeof run>>;
    for (const v of variants) {
      res[v].wall.push(round[v].wall);
      res[v].rss.push(round[v].rss);
    }
    for (const v of ['go-ts'] as const) {
      ratios[v].wall.push(round[v].wall / round.none.wall);
      ratios[v].rss.push(round[v].rss / round.none.rss);
    }
  }
  const loadAfter = loadavg().map((l) => l.toFixed(2)).join(' / ');
  const f = (n: number, d = 2) => n.toFixed(d);
  const headers = ['Agent (init-only, fake store)', 'wall p50 s', 'peak RSS p50 MiB', 'wall ratio vs none (p50 of pairs)', 'RSS ratio vs none (p50 of pairs)'];
  const rows = [
    ['no template', f(median(res.none.wall)), f(median(res.none.rss), 1), '1', '1'],
    ['one ESO Go template, TypeScript engine (default)', f(median(res['go-ts'].wall)), f(median(res['go-ts'].rss), 1), `**${f(median(ratios['go-ts'].wall))}×**`, `**${f(median(ratios['go-ts'].rss))}×**`],
  ];
  console.log(textTable(headers, rows));
  console.log(`load average before ${loadBefore}, after ${loadAfter}`);
  const body = `# Go templates in the agent

_Written by \`npm run bench:agent:gotemplate\` (bench/agent/gotemplate.ts); the runner replaces
this file. Decision: docs/decisions/0087-templating-engines.md._

One init-only agent (\`node bin/esi.js agent\`, compiled JavaScript, the \`fake\` store, one
ExternalSecret of 4 keys) run two ways, interleaved with the order rotated each round,
${runs} rounds after one warm-up round: without a template, and with one ESO-style Go template
(\`target.template\`, engine v2: quote, printf, b64enc, if, range, splitList, trim, upper). Wall time is spawn → exit (measured by the runner), peak RSS
is /usr/bin/time's maximum resident set. Ratios are the median of the per-round ratios (each
round's variants ran back to back, so a load change affects both sides of a ratio alike).

## Machine

${machineMarkdown(machine)}
- Load average after the run (1/5/15 min): ${loadAfter} (the machine is shared: hence interleaving)

## Results

${markdownTable(headers, rows)}

Goal: ≤ 1.2× on wall time and on RSS for the agent with one Go template.
`;
  if (!opts['no-write']) writeFileSync(join(ROOT, 'docs', 'performance', 'go-templates-agent.md'), body);
}

main();

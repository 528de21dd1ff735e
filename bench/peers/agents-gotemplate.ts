// The Go-template rows of `npm run bench:peers`'s agent phase: ESI's agent without
// a template, ESI's agent with one ESO-style Go template (ExternalSecret `target.template`,
// engineVersion v2) and OpenBao Agent rendering the same output with its own consul-template
// template, all reading the same 3 KV v2 secrets as agents.ts's rows from the same server.
//   start → file: spawn → the file's name appears, rounds of the three with the order rotated;
//   steady: the three side by side for `steadyS` seconds (CPU, peak RSS and RssAnon).
// Both rendered files are checked byte for byte against each other and against the
// expected text (expectedGoFile) before anything is timed, and again after the steady window.
import { mkdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { parseGoText } from '../../src/templating/go/text.js';
import { ESO_TEMPLATE, esoTarget, expectedGoFile } from '../lib/go-template.js';
import type { VaultServer } from '../../test/support/platform/backends/openbao.js';
import { cpuOver, esiVaultConfig, startEach, KEYS, launchBao, launchEsi, OUT, timeToFile, value, type Running, type Starter } from './agent-launch.js';
import { memorySampler, type Memory } from './procstat.js';

export type GoKind = 'esi-none' | 'esi-go' | 'bao-go';
export const GO_KINDS: readonly GoKind[] = ['esi-none', 'esi-go', 'bao-go'];
const SECRET = 'db';
const GO_FILE = 'config.yaml';

/** ESO_TEMPLATE's output (bench/lib/go-template.ts) in consul-template, with OpenBao Agent's
 *  own functions: Sprig's quote is Go's %q, b64enc is base64Encode (standard alphabet), upper
 *  toUpper, trim trimSpace, and
 *  `splitList "-"` is `split "-"` (which trims its input first: the values have no spaces).
 *  No trailing newline after the last `end`: the newline is the one inside the blocks. */
export const CONSUL_TEMPLATE =
  KEYS.map((i) => `{{- with secret "secret/data/peers/key-${i}" }}{{ $k${i} := .Data.data.value -}}\n`).join('') +
  'user: {{ printf "%q" $k0 }}\npassword: {{ printf "%q" $k1 }}\n' +
  'dsn: {{ printf "postgres://%s:%s@db:5432/app" $k0 $k1 | base64Encode }}\n' +
  '{{- if $k2 }}\nregion: {{ $k2 | toUpper }}{{ end }}\n' +
  'hosts:{{ range $i, $h := split "-" $k2 }}\n  - {{ $i }}: {{ $h | trimSpace }}{{ end }}\n' +
  KEYS.map(() => '{{ end }}').join('');

export interface GoTemplateResults {
  /** The rendered file both agents wrote (checked identical). */
  bytes: number;
  startsMs: Record<GoKind, number[]>;
  steady: Record<GoKind, { cpuMs: number; seconds: number; peak: Memory; last: Memory }>;
  load: { before: number[]; after: number[] };
}

export interface GoTemplateOptions {
  runs: number;
  steadyS: number;
  bao: string;
  esiNodeArgs?: string[];
  log: (line: string) => void;
}

function starters(server: VaultServer, token: string, opts: GoTemplateOptions): Record<GoKind, Starter> {
  const esi = (withTemplate: boolean): Starter => ({
    outDir: (dir) => join(dir, 'esi-root', OUT),
    name: SECRET,
    start: async (dir) => {
      const root = join(dir, 'esi-root');
      const secret = {
        name: SECRET, dataFrom: [], data: KEYS.map((i) => ({ secretKey: `k${i}`, remoteRef: { key: `peers/key-${i}`, property: 'value' } })),
        ...(withTemplate ? esoTarget(GO_FILE) : {}),
      };
      const config = await esiVaultConfig(server, token, root, [secret], []);
      return { ...launchEsi(config, root, opts.esiNodeArgs), file: join(root, OUT, SECRET, withTemplate ? GO_FILE : 'k2') };
    },
  });
  return {
    'esi-none': esi(false),
    'esi-go': esi(true),
    'bao-go': {
      outDir: (dir) => join(dir, 'bao-out'),
      name: GO_FILE,
      start: async (dir): Promise<Running> => {
        const file = join(dir, 'bao-out', GO_FILE);
        await mkdir(join(dir, 'bao-out'), { recursive: true });
        return { ...(await launchBao(opts.bao, server, token, dir, CONSUL_TEMPLATE, file)), file };
      },
    },
  };
}

/** Runs after agents.ts's rows, against the same server holding `peers/key-0..2`. */
export async function runGoTemplateAgents(server: VaultServer, token: string, opts: GoTemplateOptions): Promise<GoTemplateResults> {
  // The row measures an ESO template the engine renders (src/templating/go/): a refused one
  // would measure an error instead.
  parseGoText(ESO_TEMPLATE);
  const load0 = os.loadavg();
  const expected = expectedGoFile(value(0), value(1), value(2));
  const all = starters(server, token, opts);
  const written: Partial<Record<GoKind, string>> = {};
  for (const kind of GO_KINDS) {
    await timeToFile(kind, all[kind], async (file) => { // warm-up, content checked
      written[kind] = await readFile(file, 'utf8');
    });
  }
  if (written['esi-none'] !== value(2)) throw new Error(`esi-none wrote ${JSON.stringify(written['esi-none']?.slice(0, 20))}…, not k2's value`);
  checkSame(written['esi-go'], written['bao-go'], expected);
  const startsMs = { 'esi-none': [], 'esi-go': [], 'bao-go': [] } as Record<GoKind, number[]>;
  for (let i = 0; i < opts.runs; i++) {
    // One round = the three back to back, the order rotated each round (load changes hit all alike).
    for (let k = 0; k < GO_KINDS.length; k++) {
      const kind = GO_KINDS[(k + i) % GO_KINDS.length]!;
      startsMs[kind].push(await timeToFile(kind, all[kind]));
    }
  }
  const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(1);
  opts.log(`Go template agents: start → file p50 esi without ${p50(startsMs['esi-none'])} ms, with ${p50(startsMs['esi-go'])} ms, bao ${p50(startsMs['bao-go'])} ms`);
  const teardowns: (() => Promise<unknown>)[] = [];
  try {
    const running = await startEach(GO_KINDS, all, teardowns);
    await new Promise((r) => setTimeout(r, 3000)); // settle: all have started and written once
    const mem = GO_KINDS.map((kind) => memorySampler(running[kind].child.pid!, 500));
    const cpu = await cpuOver(GO_KINDS.map((kind) => running[kind].child.pid!), opts.steadyS);
    const steady = Object.fromEntries(GO_KINDS.map((kind, i) => [kind, { cpuMs: cpu[i]!, seconds: opts.steadyS, ...mem[i]!.stop() }])) as GoTemplateResults['steady'];
    checkSame(await readFile(running['esi-go'].file, 'utf8'), await readFile(running['bao-go'].file, 'utf8'), expected);
    const mib = (kind: GoKind) => (steady[kind].peak.anonKiB / 1024).toFixed(1);
    opts.log(`Go template agents: ${opts.steadyS} s steady: CPU ${GO_KINDS.map((k) => `${k} ${steady[k].cpuMs} ms`).join(', ')}; RssAnon ${GO_KINDS.map((k) => `${k} ${mib(k)} MiB`).join(', ')}`);
    return { bytes: Buffer.byteLength(expected), startsMs, steady, load: { before: load0, after: os.loadavg() } };
  } finally {
    for (const fn of teardowns.reverse()) await fn();
  }
}

function checkSame(esi: string | undefined, bao: string | undefined, expected: string): void {
  if (esi !== bao) throw new Error(`ESI and OpenBao Agent rendered different files:\n${JSON.stringify(esi)}\n---\n${JSON.stringify(bao)}`);
  if (esi !== expected) throw new Error(`both agents rendered an unexpected file:\n${esi}\n--- expected\n${expected}`);
}

// The oracle of the TypeScript Go-template engine's differential tests: the Go engine
// compiled natively (src/templating/go/engine, the same code as the WebAssembly engine),
// and the comparison of both engines over a corpus. Where the TypeScript engine renders,
// its output (or its error: size, Go's worded message) must be byte-identical to Go's; where it declines
// (Unsupported), the Go engine renders (src/templating/go/index.ts), so declining is
// allowed but counted, by reason.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { builtEngineDir } from '../../../src/templating/go/locate.js';
import { GoExecError, OutputTooLarge, parseGoText, renderGoText, Unsupported } from '../../../src/templating/gotext/index.js';
import type { CorpusRequest } from './go-corpus.js';

const native = join(builtEngineDir(), 'engine-native');
if (!existsSync(native)) throw new Error(`${native} missing: run npm run build:gotemplate`);

export type Result = { output?: string; error?: string };

export function oracle(requests: CorpusRequest[]): Result[][] {
  const ref = spawnSync(native, [], { input: requests.map((r) => JSON.stringify({ maxOutput: 1 << 20, ...r })).join('\n') + '\n', maxBuffer: 256 * 1024 * 1024, timeout: 120_000 });
  if (ref.status !== 0) throw new Error(`native engine failed: ${ref.stderr}`);
  return ref.stdout.toString('utf8').trimEnd().split('\n').map((l) => (JSON.parse(l) as { results: Result[] }).results);
}

export interface Comparison {
  /** Templates where the engines differ (the first 10). */
  diffs: string[];
  rendered: number;
  declined: number;
  /** Templates Go renders (or parses) without an error, and how many of those TypeScript does. */
  goOk: number;
  tsOfGoOk: number;
  reasons: Map<string, number>;
  /** Templates that fail with Go's message worded by TypeScript. */
  goErrors: number;
  /** Per template: rendered by TypeScript (true) or declined (false), in corpus order. */
  tsRendered: boolean[];
}

export function compare(requests: CorpusRequest[], deadlineMs = 10_000): Comparison {
  const expected = oracle(requests);
  const c: Comparison = { diffs: [], rendered: 0, declined: 0, goOk: 0, tsOfGoOk: 0, reasons: new Map(), goErrors: 0, tsRendered: [] };
  requests.forEach((req, i) => {
    const data = Object.fromEntries(Object.entries(req.data).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]));
    req.jobs.forEach((job, j) => {
      const want = expected[i]![j]!;
      if (want.error === undefined) c.goOk++;
      let got: Result;
      try {
        if (req.parseOnly) {
          parseGoText(job.source);
          got = {};
        } else {
          const limits = { maxOutput: 1 << 20, deadline: performance.now() + deadlineMs, onTimeout: () => new Error('timeout') };
          got = { output: Buffer.from(renderGoText(job.name, job.source, data, limits)).toString('base64') };
        }
        c.rendered++;
        if (want.error === undefined) c.tsOfGoOk++;
      } catch (err) {
        if (err instanceof Unsupported) {
          c.declined++;
          c.tsRendered.push(false);
          const why = err.message.replace(/"[^"]*"/g, '"…"');
          c.reasons.set(why, (c.reasons.get(why) ?? 0) + 1);
          return;
        }
        c.rendered++;
        if (err instanceof GoExecError) {
          c.goErrors++;
          got = { error: err.goMessage };
        }
        else if (err instanceof OutputTooLarge) got = { error: `template: ${job.name}: rendered output exceeds the size limit` };
        else throw err;
      }
      c.tsRendered.push(true);
      const same = req.parseOnly ? want.error === undefined : got.output === (want.error === undefined ? (want.output ?? '') : want.output) && got.error === want.error;
      if (!same && c.diffs.length < 10) c.diffs.push(`${job.name} ${JSON.stringify(job.source)}: ts ${JSON.stringify(got)} go ${JSON.stringify(want)}`);
    });
  });
  return c;
}

export const topReasons = (c: Comparison): string => JSON.stringify([...c.reasons].sort((a, b) => b[1] - a[1]).slice(0, 12));

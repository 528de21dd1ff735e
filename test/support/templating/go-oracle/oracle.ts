// The oracle of the Go-template differential tests: this folder's Go program (text/template,
// Sprig, ESO's helpers) compiled natively, and the comparison of ESI's TypeScript engine
// (src/templating/go/) with it over a corpus. Where the TypeScript engine renders, its
// output (or its error: size, Go's worded message) must be byte-identical to Go's; where it
// fails (a syntax error, an execution failure in its own words), Go must fail too; where it
// refuses (Unsupported), the refusal is allowed but counted, by reason.
import { spawnSync } from 'node:child_process';
import { ExecFailure, GoExecError, GoSyntaxError, OutputTooLarge, parseGoText, renderGoText, Unsupported } from '../../../../src/templating/go/text.js';
import type { CorpusRequest } from '../go-corpus.js';
import { oracleBinary } from './locate.js';

const native = oracleBinary();

export type Result = { output?: string; error?: string };

export function oracle(requests: CorpusRequest[]): Result[][] {
  const ref = spawnSync(native, [], { input: requests.map((r) => JSON.stringify({ maxOutput: 1 << 20, ...r })).join('\n') + '\n', maxBuffer: 256 * 1024 * 1024, timeout: 120_000 });
  if (ref.status !== 0) throw new Error(`native engine failed: ${ref.stderr}`);
  return ref.stdout.toString('utf8').trimEnd().split('\n').map((l) => (JSON.parse(l) as { results: Result[] }).results);
}

/** Every function name Go's engine knows (Sprig minus env/expandenv/getHostByName, ESO's helpers). */
export function goFunctions(): string[] {
  const ref = spawnSync(native, [], { input: '{"functions":true,"jobs":[]}\n', timeout: 60_000 });
  if (ref.status !== 0) throw new Error(`native engine failed: ${ref.stderr}`);
  return (JSON.parse(ref.stdout.toString('utf8')) as { functions: string[] }).functions;
}

export interface Comparison {
  /** Templates where the engines differ (the first 10). */
  diffs: string[];
  /** Rendered, or failed with Go's message or in agreement with Go. */
  rendered: number;
  refused: number;
  /** Templates Go renders (or parses) without an error, and how many of those TypeScript does. */
  goOk: number;
  tsOfGoOk: number;
  reasons: Map<string, number>;
  /** Templates that fail with Go's message worded by TypeScript. */
  goErrors: number;
  /** Templates both engines fail, TypeScript in its own words (syntax, execution). */
  bothFail: number;
  /** Per template: rendered by TypeScript (true) or refused (false), in corpus order. */
  tsRendered: boolean[];
}

export function compare(requests: CorpusRequest[], deadlineMs = 10_000): Comparison {
  const expected = oracle(requests);
  const c: Comparison = { diffs: [], rendered: 0, refused: 0, goOk: 0, tsOfGoOk: 0, reasons: new Map(), goErrors: 0, bothFail: 0, tsRendered: [] };
  const differ = (job: { name: string; source: string }, got: unknown, want: Result) => {
    if (c.diffs.length < 10) c.diffs.push(`${job.name} ${JSON.stringify(job.source)}: ts ${JSON.stringify(got)} go ${JSON.stringify(want)}`);
  };
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
        if (err instanceof GoSyntaxError || err instanceof ExecFailure) {
          c.rendered++;
          c.tsRendered.push(true);
          if (want.error === undefined) differ(job, { [err.name]: err.reason }, want);
          else c.bothFail++;
          return;
        }
        if (err instanceof Unsupported) {
          c.refused++;
          c.tsRendered.push(false);
          const why = err.message.replace(/"[^"]*"/g, '"…"');
          c.reasons.set(why, (c.reasons.get(why) ?? 0) + 1);
          return;
        }
        c.rendered++;
        if (err instanceof GoExecError) {
          c.goErrors++;
          got = { error: err.goMessage };
        } else if (err instanceof OutputTooLarge) got = { error: `template: ${job.name}: rendered output exceeds the size limit` };
        else throw err;
      }
      c.tsRendered.push(true);
      const same = req.parseOnly ? want.error === undefined : got.output === (want.error === undefined ? (want.output ?? '') : want.output) && got.error === want.error;
      if (!same) differ(job, got, want);
    });
  });
  return c;
}

export const topReasons = (c: Comparison): string => JSON.stringify([...c.reasons].sort((a, b) => b[1] - a[1]).slice(0, 12));

// Tables of the admission benchmark: for the terminal and for BENCHMARKS.md.
import type { LoadResult } from '../lib/load.js';
import { machineMarkdown, type MachineInfo } from '../lib/machine.js';
import { markdownTable, textTable } from '../lib/markdown.js';
import { MIX } from './corpus.js';

/** Design budget: p99 under 5 ms at 500 req/s. */
export const BUDGET = { rate: 500, p99Ms: 5 };

export interface PhaseReport {
  name: string;
  load: LoadResult;
  /** CPU used by other processes on the machine during the phase, in cores (incl. steal). */
  machine: { otherCores: number; stealCores: number };
  server: {
    /** From the esi_admission_duration_seconds histogram, interpolated like histogram_quantile(). */
    p99Ms: number;
    p99BucketMs: number;
    p50Ms: number;
    meanMs: number;
    observations: number;
    cpuPercent: number;
    /** Server CPU time per answered review (robust to other load, unlike latency). */
    cpuMsPerRequest: number;
    elu: number;
    rssMiB: number;
    /** Event-loop delay (monitorEventLoopDelay) and GC pauses over the phase. */
    loopDelay: { p99Ms: number; maxMs: number };
    gc: { count: number; totalMs: number; maxMs: number; major: number };
  };
}

export interface RunReport {
  machine: MachineInfo;
  phases: PhaseReport[];
  corpus: { reviews: number; minBytes: number; maxBytes: number; byShape: Record<string, { count: number; bytes: number }> };
  objects: Record<string, number>;
  deepChecks: number;
  settings: { durationMs: number; warmupMs: number; connections: number; arrivals: string; lookup: string };
}

const ms = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

const HEADERS = ['Phase', 'Achieved req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'Errors', 'Non-2xx', 'Wrong', 'Server p99 ms', 'Server mean ms', 'Server CPU', 'Server CPU ms/req', 'Client CPU', 'Other load'];

function rows(r: RunReport): string[][] {
  return r.phases.map((p) => {
    const l = p.load.latencyMs;
    const bucket = p.server.p99BucketMs === Infinity ? '>0.5 s' : `≤${ms(p.server.p99BucketMs)}`;
    return [
      p.load.overloaded ? `${p.name} (overloaded, stopped after ${p.load.overloaded.afterS.toFixed(0)} s)` : p.name, p.load.throughput.toFixed(0), ms(l.p50), ms(l.p90), ms(l.p99), ms(l.p999), ms(l.max),
      String(p.load.errors), String(p.load.non2xx), String(p.load.invalid),
      `${ms(p.server.p99Ms)} (${bucket})`, ms(p.server.meanMs), `${p.server.cpuPercent.toFixed(0)} %`, ms(p.server.cpuMsPerRequest),
      `${p.load.generatorCpuPercent.toFixed(0)} %`, `${p.machine.otherCores.toFixed(2)} cores`,
    ];
  });
}

export function budgetVerdict(r: RunReport): string {
  const at = r.phases.find((p) => p.load.mode === 'fixed-rate' && p.load.targetRate === BUDGET.rate);
  const below = r.phases.find((p) => p.load.overloaded && (p.load.targetRate ?? 0) < BUDGET.rate);
  if (!at && below) return `Budget (p99 < ${BUDGET.p99Ms} ms at ${BUDGET.rate} req/s): **MISSED** — the server was already overloaded at ${below.load.targetRate} req/s.`;
  if (!at) return `Budget (p99 < ${BUDGET.p99Ms} ms at ${BUDGET.rate} req/s): not measured in this run.`;
  const p99 = at.load.latencyMs.p99;
  const ok = !at.load.overloaded && p99 < BUDGET.p99Ms && at.load.throughput >= BUDGET.rate * 0.98;
  return `Budget (p99 < ${BUDGET.p99Ms} ms at ${BUDGET.rate} req/s): **${ok ? 'met' : 'MISSED'}** — p99 ${ms(p99)} ms at ${at.load.throughput.toFixed(0)} req/s achieved.`;
}

/** A warning when other processes took a noticeable share of the machine during a phase. */
export function contention(r: RunReport): string {
  const busy = r.phases.filter((p) => p.machine.otherCores > 0.2);
  if (!busy.length) return '';
  return `⚠ Other processes used noticeable CPU during ${busy.map((p) => `"${p.name}" (${p.machine.otherCores.toFixed(2)} cores)`).join(', ')}: ` +
    'those figures are disturbed; rerun on a quiet machine (`--wait-quiet 300`).';
}

export function renderTerminal(r: RunReport): string {
  const warn = contention(r);
  return `${textTable(HEADERS, rows(r))}\n\n${budgetVerdict(r).replace(/\*\*/g, '')}${warn ? `\n${warn}` : ''}\n\n${shapeTable(r)}`;
}

function corpusTable(r: RunReport): string {
  const expect: Record<string, string> = {
    unlabelled: 'allowed, no patch', 'deny-missing': 'denied (ExternalSecret missing)', 'deny-condition': 'denied (ClusterSecretStore conditions)',
  };
  const shapes = Object.keys(MIX).filter((s) => r.corpus.byShape[s]);
  return markdownTable(['Pod shape', 'Reviews', 'Mean size (bytes)', 'Expected answer'], shapes.map((s) => {
    const b = r.corpus.byShape[s]!;
    return [s, String(b.count), String(Math.round(b.bytes / b.count)), expect[s] ?? 'allowed + JSONPatch'];
  }));
}

/** Client-side latency by pod shape in the budget's phase (or the busiest fixed-rate one). */
function shapeTable(r: RunReport): string {
  const fixed = r.phases.filter((p) => p.load.mode === 'fixed-rate');
  const phase = fixed.find((p) => p.load.targetRate === BUDGET.rate) ?? fixed[fixed.length - 1];
  if (!phase) return '';
  const shapes = Object.keys(MIX).filter((s) => phase.load.byTag[s]);
  const table = markdownTable(['Pod shape', 'Requests', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'], shapes.map((s) => {
    const t = phase.load.byTag[s]!;
    return [s, String(t.count), ms(t.p50), ms(t.p90), ms(t.p99), ms(t.max)];
  }));
  return `Latency by pod shape during "${phase.name}":\n\n${table}`;
}

function phaseNotes(r: RunReport): string {
  const lines = r.phases.map((p) => {
    const lag = p.load.scheduleLagMs ? `; generator send lag p99 ${ms(p.load.scheduleLagMs.p99)} ms, max ${ms(p.load.scheduleLagMs.max)} ms` : '';
    const s = p.server;
    return `- ${p.name}: ${p.load.completed} requests in ${p.load.durationS.toFixed(1)} s; at most ${p.load.maxInFlight} in flight; ${p.load.newConnections} new TLS connections${lag}. ` +
      `Server: event-loop utilisation ${(s.elu * 100).toFixed(0)} %, event-loop delay p99 ${ms(s.loopDelay.p99Ms)} ms / max ${ms(s.loopDelay.maxMs)} ms, ` +
      `GC ${s.gc.count} pauses (${s.gc.major} major) totalling ${ms(s.gc.totalMs)} ms, longest ${ms(s.gc.maxMs)} ms; RSS ${s.rssMiB.toFixed(0)} MiB; ${s.observations} histogram observations.`;
  });
  return lines.join('\n');
}

export function renderSection(r: RunReport): string {
  const s = r.settings;
  return `_Written by \`npm run bench:admission\` (bench/admission/run.ts); the runner replaces this whole section._

Latency of \`POST /mutate\` on the real webhook server (\`webhook/server.ts\`, fastify over
HTTPS, metrics on, the product pino logger at \`info\` writing to /dev/null) with an in-memory
lookup (\`${s.lookup}\`) over ${r.objects.externalSecrets} ExternalSecrets, ${r.objects.secretStores} SecretStores and ${r.objects.clusterSecretStores} ClusterSecretStores
(with conditions) in ${r.objects.namespaces} namespaces. The load generator is a second process speaking to it like the kube-apiserver does: HTTP/1.1
over TLS (server certificate verified against the CA), one request per connection at a time,
new connections (full handshakes, no session resumption) opened for concurrent requests and
up to 25 idle ones kept (client-go's idleConnsPerHost); a fresh uid per request; every answer is
checked (uid, allowed, patch or denial) and ${r.deepChecks} were checked deeply (patch applied, agent
config lists exactly the requested secrets). Fixed-rate phases are open loop (${s.arrivals} arrivals): each
starts with ${s.warmupMs / 1000} s of warm-up (rate ramping up from 10 %, discarded), then
${s.durationMs / 1000} s are measured; a phase stops early if 256 requests are in flight (the server is not keeping
up) and higher rates are then skipped. A 5 s warm-up of the process comes first. The saturation
phase is closed loop with ${s.connections} connections. Client and server share the machine's cores.

### Machine

${machineMarkdown(r.machine)}

### Results

${markdownTable(HEADERS, rows(r))}

${budgetVerdict(r)}
${contention(r) ? `\n${contention(r)}\n` : ''}
- Latency columns: client side, from writing the request to the last byte of the answer.
- Server p99 / mean: from the webhook's own \`esi_admission_duration_seconds\` histogram
  (difference of two scrapes around the phase, warm-up included; p99 interpolated like
  \`histogram_quantile\`, with the bucket bound that holds it). It times only the handler
  (decision + patch), not TLS, HTTP parsing, JSON body parsing or serialisation.
- Server CPU / Client CPU: user + system CPU time of the webhook / load-generator process over the phase, % of one core.
  Server CPU ms/req: the webhook's CPU time divided by the reviews it answered (TLS, HTTP, JSON, admission, GC, metrics).
- Other load: CPU used by every other process on the machine during the phase (from /proc/stat, steal included), in cores.
- Errors / Non-2xx / Wrong: transport failures or timeouts / HTTP status not 2xx / 2xx answers whose content was wrong.

${phaseNotes(r)}

${shapeTable(r)}

### Corpus

${r.corpus.reviews} AdmissionReviews generated with a fixed seed by \`bench/admission/corpus.ts\`
(\`tsx bench/admission/corpus.ts --out DIR\` writes them as JSON), sizes ${r.corpus.minBytes}–${r.corpus.maxBytes} bytes.
The traffic cycles through them in a seeded random order.

${corpusTable(r)}

### How to run

\`\`\`sh
npm run bench:admission                 # full run, about 2 minutes; rewrites this section
npm run bench:admission -- --quick      # smoke run (3 s phases), prints only
npm run bench:admission -- --cpu-prof   # also profiles the server (bench/admission/.profiles/)
npm run bench:admission -- --help       # rates, durations, connections, arrivals, lookup
\`\`\``;
}

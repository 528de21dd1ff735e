// The standing adversarial run: ≥ 100,000 seeded inputs against the pure admission
// functions in-process, a sample over real HTTPS, and a differential check of the
// template syntax check against handlebars. Invariants: no exception, no 5xx, every
// denial names the annotation or object and is bounded, bounded time per request,
// admitted ⇒ the agent accepts the configuration, no canary value in any answer.
// The figures it prints are the ones SECURITY.md records. Seed: ESI_FUZZ_SEED.
import type { V1Pod } from '@kubernetes/client-node';
import { request } from 'node:https';
import { createRequire } from 'node:module';
import pino from 'pino';
import t from 'tap';
import { Rng } from '../../bench/lib/rng.js';
import { generateCa, issueServingCert } from '../../certs/pki.js';
import { agentConfigProblem } from '../../src/agent-config/check.js';
import { checkTemplateSyntax } from '../../src/templating/syntax.js';
import { admit } from '../../webhook/admission.js';
import { webhookMetrics } from '../../webhook/metrics.js';
import { MAX_DENIAL_LENGTH, parseAnnotations } from '../../src/pod-contract/parse.js';
import { buildServer, type AdmissionReview } from '../../webhook/server.js';
import { fuzzPod } from '../support/adversarial/fuzz.js';
import { admitContext, CANARY } from '../support/adversarial/world.js';

const SEED = Number(process.env.ESI_FUZZ_SEED ?? 20261123);
const INPUTS = 100_000;
/** Every FULL-th input goes through the whole admission (resolve, mutate, config check). */
const FULL = 10;
/** A loaded 2-core CI machine: per-request bound with a wide margin for GC pauses. */
const MAX_REQUEST_MS = 500;
const RUN_LIMIT_MS = 100_000;
const NAMED = /^ESI cannot inject secrets into pod [^:]+: (esi\.dev\/|metadata|spec|the |ExternalSecret |SecretStore |ClusterSecretStore )/;

interface Figures { inputs: number; admissions: number; admitted: number; denied: number; worstMs: number; worstCpuMs: number; crashes: number; leaks: number; violations: string[] }

function configsOf(pod: V1Pod): unknown[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]
    .filter((c) => c.name === 'esi-agent' || c.name === 'esi-agent-init')
    .map((c) => JSON.parse(c.env!.find((e) => e.name === 'ESI_AGENT_CONFIG')!.value!));
}

function check(f: Figures, i: number, pod: V1Pod, ctx: ReturnType<typeof admitContext>): void {
  const note = (what: string): void => {
    if (f.violations.length < 10) f.violations.push(`seed ${SEED} #${i}: ${what}`);
  };
  const leak = (what: string): void => {
    f.leaks++;
    note(what);
  };
  f.admissions++;
  const started = performance.now();
  const cpu = process.cpuUsage();
  let r: ReturnType<typeof admit>;
  try {
    r = admit(pod, ctx);
  } catch (err) {
    f.crashes++;
    return void note(`exception ${(err as Error).stack?.split('\n').slice(0, 3).join(' | ')}`);
  }
  f.worstMs = Math.max(f.worstMs, performance.now() - started);
  const used = process.cpuUsage(cpu);
  f.worstCpuMs = Math.max(f.worstCpuMs, (used.user + used.system) / 1000);
  if (r.kind === 'denied') {
    f.denied++;
    if (!NAMED.test(r.message)) note(`denial names nothing: ${r.message.slice(0, 200)}`);
    if (r.message.length > MAX_DENIAL_LENGTH) note(`denial of ${r.message.length} characters`);
    if (r.message.includes(CANARY)) leak('canary in a denial');
  } else if (r.kind === 'mutated') {
    f.admitted++;
    for (const c of configsOf(r.pod)) {
      const problem = agentConfigProblem(c);
      if (problem) note(`admitted but the agent refuses: ${problem.message}`);
    }
    if (r.warnings.some((w) => w.includes(CANARY))) leak('canary in a warning');
  }
}

t.test(`fuzzed admissions (seed ${SEED})`, async (t) => {
  const rng = new Rng(SEED);
  const ctx = admitContext();
  const f: Figures = { inputs: 0, admissions: 0, admitted: 0, denied: 0, worstMs: 0, worstCpuMs: 0, crashes: 0, leaks: 0, violations: [] };
  const started = performance.now();
  for (let i = 0; i < INPUTS; i++) {
    const pod = fuzzPod(rng);
    f.inputs++;
    if (i % FULL === 0) check(f, i, pod, ctx);
    else {
      try {
        const r = parseAnnotations(pod.metadata?.annotations);
        if (!r.ok && r.problems.some((p) => p.includes(CANARY))) f.leaks++;
      } catch (err) {
        f.crashes++;
        f.violations.push(`seed ${SEED} #${i}: parseAnnotations threw ${(err as Error).message}`);
      }
    }
    if (performance.now() - started > RUN_LIMIT_MS) break;
  }
  const seconds = (performance.now() - started) / 1000;
  t.comment(`inputs ${f.inputs}, full admissions ${f.admissions} (admitted ${f.admitted}, denied ${f.denied}), worst admission ${f.worstMs.toFixed(1)} ms wall / ${f.worstCpuMs.toFixed(1)} ms CPU, crashes ${f.crashes}, leaks ${f.leaks}, ${seconds.toFixed(1)} s`);
  t.same(f.violations, [], 'every invariant holds');
  t.equal(f.crashes, 0, 'crashes = 0');
  t.equal(f.leaks, 0, 'leaks = 0');
  t.ok(f.inputs >= INPUTS, `${f.inputs} inputs tried`);
  t.ok(f.worstMs < MAX_REQUEST_MS, `worst admission ${f.worstMs.toFixed(1)} ms`);
  t.ok(f.admitted > FULL * 10, 'the property admitted ⇒ agent accepts is exercised');
});

t.test('template syntax check: whatever it accepts, handlebars parses', async (t) => {
  const hb = createRequire(import.meta.url)('handlebars/dist/handlebars.js') as { parse(s: string): unknown };
  const atoms = ['{{', '}}', '{{{', '}}}', '{{#', '{{/', '{{^', '{{else', '{{else}}', '{{^}}', '{{!', '{{!--', '--}}', '{{&', '{{~', '~}}',
    '(', ')', ' ', 'a', 'if', 'each', '.', '..', '/', 'this', '@', '"s"', "'q'", '[x y]', '=', '1', '-2', '1.5', 'true', 'null', 'as |', '|',
    '\\', '\n', '{{>', '{{*', '}}}}', '{{{{', 'db.pw', ' as |i|', '{{#if a}}', '{{/if}}', '{{#each a}}', '{{/each}}', '{{a}}', '{{else if b}}', '[', ']', '~'];
  const rng = new Rng(SEED + 1);
  let accepted = 0;
  const wrong: string[] = [];
  for (let i = 0; i < 20_000; i++) {
    let s = '';
    for (let j = rng.int(1, 16); j > 0; j--) s += rng.pick(atoms);
    let ok = true;
    try {
      checkTemplateSyntax(s);
    } catch {
      ok = false;
    }
    if (!ok) continue;
    accepted++;
    try {
      hb.parse(s);
    } catch {
      if (wrong.length < 5) wrong.push(JSON.stringify(s));
    }
  }
  t.same(wrong, [], 'no template accepted here is refused by handlebars');
  t.ok(accepted > 500, `${accepted} random templates accepted and parsed by both`);
});

t.test('a sample over real HTTPS: no 5xx, well-formed answers', async (t) => {
  const now = Date.now();
  const ca = await generateCa(now, 3600_000);
  const leaf = await issueServingCert(ca, { dnsNames: ['localhost'], ips: ['127.0.0.1'] }, now, 3600_000);
  const material = { certPem: leaf.certPem, keyPem: leaf.keyPem, caPem: ca.certPem };
  const ctx = admitContext();
  const app = await buildServer({
    tls: { current: () => material, onChange: () => undefined, ready: () => true, stop: async () => undefined },
    lookup: Object.assign(ctx.lookup, { synced: () => true }),
    resolve: {}, agent: ctx.agent, metrics: webhookMetrics(), logger: pino({ level: 'silent' }),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  const port = (app.server.address() as { port: number }).port;
  const post = (body: string) => new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/mutate', method: 'POST', ca: ca.certPem, servername: 'localhost', headers: { 'content-type': 'application/json' }, timeout: 10_000 }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
  const rng = new Rng(SEED + 2);
  let worst = 0;
  const bodies: string[] = ['{', '[]', 'null', '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}',
    JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u', kind: { kind: 'Pod' }, operation: 'CREATE', object: 'x' } })];
  for (let i = 0; i < 300; i++) {
    const review: AdmissionReview = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: `u-${i}`, kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE', namespace: 'team-adv', object: fuzzPod(rng) } };
    bodies.push(JSON.stringify(review));
  }
  for (const body of bodies) {
    const started = performance.now();
    const r = await post(body);
    worst = Math.max(worst, performance.now() - started);
    t.ok(r.status < 500, `status ${r.status}`);
    t.notOk(r.text.includes(CANARY), 'no canary in the answer');
  }
  t.comment(`HTTPS sample: ${bodies.length} requests, worst round trip ${worst.toFixed(1)} ms`);
});

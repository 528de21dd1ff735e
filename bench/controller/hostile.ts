// The "hostile templates" step of `npm run bench:controller` (ADR 0087): the sync
// latency of ordinary ExternalSecrets (a changed store value → all their Secrets hold it)
// without and with 20 ExternalSecrets whose Go template loops, in another namespace, and the
// slowest /healthz answer meanwhile. Runs against the bench's controller (run.ts), or alone
// with `--hostile-only` (no 10 000-object corpus).
import { loadavg } from 'node:os';
import { API_GROUP } from '../../src/api/types.js';
import { isKubeStatus, type KubeRest } from '../../src/kube/rest.js';

const VICTIMS = 20;
const HOSTILE = 20;
const ROUNDS = 5;
const LOOP = '{{ range $i := until 1000000 }}{{ range $j := until 1000000 }}{{ end }}{{ end }}';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function namespace(rest: KubeRest, name: string, cls: string, value: string): Promise<void> {
  await rest.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  await rest.create(`/apis/${API_GROUP}/v1/namespaces/${name}/secretstores`, storeBody(cls, value));
}

function storeBody(cls: string, value: string, metadata: object = { name: 'fake' }) {
  return { apiVersion: `${API_GROUP}/v1`, kind: 'SecretStore', metadata, spec: { controller: cls, provider: { fake: { data: [{ key: 'db', value: JSON.stringify({ a: value }) }] } } } };
}

function es(ns: string, name: string, template: string) {
  return {
    apiVersion: `${API_GROUP}/v1`, kind: 'ExternalSecret', metadata: { name, namespace: ns },
    spec: { secretStoreRef: { name: 'fake', kind: 'SecretStore' }, refreshInterval: '1h', dataFrom: [{ extract: { key: 'db' } }], target: { template: { data: { password: template } } } },
  };
}

/** Changes the victims' store value; seconds until every victim Secret holds it. */
async function round(rest: KubeRest, cls: string, ns: string, value: string): Promise<number> {
  const path = `/apis/${API_GROUP}/v1/namespaces/${ns}/secretstores/fake`;
  let started: number;
  // The controller writes the store's status meanwhile: a conflict is read again.
  for (let attempt = 1; ; attempt++) {
    const cur = await rest.get<{ metadata: object }>(path);
    started = performance.now();
    try {
      await rest.replace(path, storeBody(cls, value, cur.metadata));
      break;
    } catch (err) {
      if (attempt >= 10 || !isKubeStatus(err, 409)) throw err;
    }
  }
  const want = Buffer.from(value.toUpperCase()).toString('base64');
  for (let i = 0; i < VICTIMS; ) {
    const s = await rest.get<{ data?: Record<string, string> }>(`/api/v1/namespaces/${ns}/secrets/app-${i}`).catch(() => undefined);
    if (s?.data?.password === want) i++;
    else await sleep(50);
  }
  return (performance.now() - started) / 1000;
}

/** Slowest /healthz answer (ms) while `run` runs, polled every 100 ms. */
async function watchHealth<T>(port: number, run: () => Promise<T>): Promise<{ result: T; slowestMs: number; failures: number }> {
  let slowestMs = 0;
  let failures = 0;
  let done = false;
  const poll = (async () => {
    while (!done) {
      const t0 = performance.now();
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5000) }).then((r) => r.ok, () => false);
      slowestMs = Math.max(slowestMs, performance.now() - t0);
      if (!ok) failures++;
      await sleep(100);
    }
  })();
  const result = await run();
  done = true;
  await poll;
  return { result, slowestMs, failures };
}

/** Runs the step against a running controller serving class `cls`; the table rows. */
export async function hostileStep(rest: KubeRest, cls: string, port: number): Promise<string[][]> {
  const suffix = Date.now().toString(36);
  const [victim, evil] = [`bench-victim-${suffix}`, `bench-hostile-${suffix}`];
  await namespace(rest, victim, cls, 'v0');
  for (let i = 0; i < VICTIMS; i++) await rest.create(`/apis/${API_GROUP}/v1/namespaces/${victim}/externalsecrets`, es(victim, `app-${i}`, '{{ .a | upper }}'));
  await round(rest, cls, victim, 'warm');
  const measure = async (tag: string) => {
    const out: number[] = [];
    for (let r = 0; r < ROUNDS; r++) out.push(await round(rest, cls, victim, `${tag}${r}`));
    return out;
  };
  const quiet = await watchHealth(port, () => measure('q'));
  const load = loadavg().map((l) => l.toFixed(2)).join(' / ');
  await namespace(rest, evil, cls, 'x');
  for (let i = 0; i < HOSTILE; i++) await rest.create(`/apis/${API_GROUP}/v1/namespaces/${evil}/externalsecrets`, es(evil, `loop-${i}`, LOOP));
  await sleep(3000); // the first hostile renders are under way
  const hostile = await watchHealth(port, () => measure('h'));
  const loadAfter = loadavg().map((l) => l.toFixed(2)).join(' / ');
  const fmt = (xs: number[]) => `median ${median(xs).toFixed(2)} s, max ${Math.max(...xs).toFixed(2)} s`;
  const ratio = median(hostile.result) / median(quiet.result);
  console.log(`hostile templates: victims ${fmt(quiet.result)} without, ${fmt(hostile.result)} with ${HOSTILE} looping templates (×${ratio.toFixed(2)})`);
  return [
    [`${VICTIMS} ExternalSecrets, store change → all their Secrets (${ROUNDS} rounds), no hostile template`, fmt(quiet.result), `load ${load}`],
    [`the same, ${HOSTILE} looping Go templates in another namespace`, fmt(hostile.result), `×${ratio.toFixed(2)} the median; load ${loadAfter}`],
    ['slowest /healthz answer (every 100 ms): without / with', `${quiet.slowestMs.toFixed(0)} ms / ${hostile.slowestMs.toFixed(0)} ms`, `${quiet.failures + hostile.failures} unanswered`],
  ];
}

// Template bombs against the reconciler ("Rendering never blocks reconciling";
// docs/decisions/0051-render-pool.md), on the real apiserver with tenant RBAC: a hostile
// tenant creates 20 ExternalSecrets whose Go template loops and one handlebars bomb, next to
// a victim tenant's ordinary ExternalSecrets. Asserted as a user sees it: the victim's Secrets
// are written and follow store changes with their usual latency, /healthz answers all along,
// the controller keeps its Lease (it exits when it loses it), and every hostile
// ExternalSecret is Ready=False naming its template, without its values.
import t from 'tap';
import { request } from 'node:http';
import { createNamespace } from '../../support/kube.js';
import { createTenant, type Tenant } from '../../support/tenant.js';
import type { ExternalSecret } from '../../../src/api/types.js';
import { controllerEnv, decoded, getES, GROUP, startController, until, type Env } from '../../support/fixtures/controller.js';

const CANARY = 'ctl-bomb-canary-5d0c2a';
const HOSTILE_GO = 20;
const VICTIMS = 5;
// Loops without output or memory growth: only a deadline stops it.
const LOOP = '{{ range $i := until 1000000 }}{{ range $j := until 1000000 }}{{ end }}{{ end }}';
const HB_BOMB = '{{#each @root}}'.repeat(12) + 'x' + '{{/each}}'.repeat(12);

// Every refusal a user accepts for a template that would not finish: the render deadline
// (TemplateTimeout), or a bound of the engine itself (TemplateError: the output limit, the
// time budget, the render thread's heap). Which trips first depends on the machine's speed
// (the handlebars bomb once hit the 1 MiB output limit before its 1 s deadline on a
// loaded machine); each is correct. Any other reason (a template refused for what it says,
// a store error) is no limit and fails the test.
const LIMIT_REFUSAL = /exceeds the limit of \d+ characters|exceeds the size limit|exceeds the time limit|took longer than \d+ ms|render thread stopped \(out of memory/;

/** The ExternalSecret once its Ready condition is False for its template (TemplateTimeout or
 *  TemplateError): the first refusal ends the wait, and the caller judges it (the bound is for
 *  a loaded machine, not an expectation). */
async function templateRefused(ns: string, name: string, ms: number): Promise<ExternalSecret> {
  let last = '';
  return until(`ExternalSecret ${ns}/${name} Ready=False for its template`, async () => {
    const got = await getES(env, ns, name);
    const c = got.status?.conditions?.find((x) => x.type === 'Ready');
    last = JSON.stringify(c);
    return c?.status === 'False' && (c.reason === 'TemplateTimeout' || c.reason === 'TemplateError') ? got : undefined;
  }, ms).catch((err: Error) => Promise.reject(new Error(`${err.message}; last Ready condition: ${last}`)));
}

// The hostile ones reach Ready=False one at a time (their namespace is held to one render).
t.setTimeout(480_000);
const env: Env = await controllerEnv(t);
const leaseNs = await createNamespace(env.kc, 'ctl-bomb-lease', t);
const evil = await createTenant(env.kc, 'ctl-bomb-evil', t);
const victim = await createTenant(env.kc, 'ctl-bomb-victim', t);

const createAs = (tenant: Tenant, plural: string, body: object) =>
  tenant.custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: tenant.namespace, plural, body: { apiVersion: `${GROUP}/v1`, ...body } });

const storeBody = (value: string) => ({
  kind: 'SecretStore', metadata: { name: 'fake' },
  spec: { controller: env.cls, provider: { fake: { data: [{ key: 'db', value: JSON.stringify({ a: value, b: value, c: value, d: value, e: value }) }] } } },
});
const es = (name: string, template: object, annotations: Record<string, string> = {}) => ({
  kind: 'ExternalSecret', metadata: { name, annotations },
  spec: { secretStoreRef: { name: 'fake', kind: 'SecretStore' }, refreshInterval: '1h', dataFrom: [{ extract: { key: 'db' } }], target: { template } },
});

/** GET /healthz every 200 ms; the slowest answer and the failures. */
function pollHealth(port: number) {
  const stats = { probes: 0, failures: 0, slowestMs: 0 };
  let stopped = false;
  const probe = () => new Promise<void>((resolve) => {
    const started = performance.now();
    const req = request({ host: '127.0.0.1', port, path: '/healthz', timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => {
        stats.probes++;
        stats.slowestMs = Math.max(stats.slowestMs, performance.now() - started);
        if (res.statusCode !== 200) stats.failures++;
        resolve();
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => {
      stats.probes++;
      stats.failures++;
      resolve();
    });
    req.end();
  });
  const loop = (async () => {
    while (!stopped) {
      await probe();
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return { stats, stop: async () => ((stopped = true), await loop) };
}

/** Changes the victim's store value; ms until every victim Secret holds it. */
async function victimLatency(value: string): Promise<number> {
  const started = performance.now();
  const cur = (await victim.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: victim.namespace, plural: 'secretstores', name: 'fake' })) as { metadata: object };
  await victim.custom.replaceNamespacedCustomObject({
    group: GROUP, version: 'v1', namespace: victim.namespace, plural: 'secretstores', name: 'fake',
    body: { apiVersion: `${GROUP}/v1`, ...storeBody(value), metadata: cur.metadata },
  });
  await until(`victim Secrets hold ${value}`, async () => {
    for (let i = 0; i < VICTIMS; i++) {
      const s = await victim.core.readNamespacedSecret({ namespace: victim.namespace, name: `app-${i}` }).catch(() => undefined);
      if (decoded(s).password !== `${value.toUpperCase()}-${i}`) return false;
    }
    return true;
  }, 60_000);
  return performance.now() - started;
}

// Short Lease timings: a main thread stalled for 3 s loses the Lease, and the controller exits.
const ctl = await startController(env.cp.kubeconfigPath, [
  '--controller-class', env.cls, '--claim-unclassed=false', '--namespace', leaseNs,
  '--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '1s', '--coalesce-window', '1s',
  '--render-timeout', '1s',
], t);
const health = pollHealth(ctl.port);

t.test('the victim syncs as usual next to 20 looping Go templates and a handlebars bomb', async (t) => {
  await createAs(victim, 'secretstores', storeBody('v0'));
  for (let i = 0; i < VICTIMS; i++) await createAs(victim, 'externalsecrets', es(`app-${i}`, { data: { password: `{{ .a | upper }}-${i}` } }));
  const baseline = await victimLatency('v1');
  t.comment(`victim latency without hostile objects: ${baseline.toFixed(0)} ms`);

  await createAs(evil, 'secretstores', storeBody(CANARY));
  for (let i = 0; i < HOSTILE_GO; i++) await createAs(evil, 'externalsecrets', es(`loop-${i}`, { data: { password: LOOP, user: '{{ .a }}' } }));
  await createAs(evil, 'externalsecrets', es('hb-bomb', { data: { password: HB_BOMB } }, { 'esi.dev/template-engine': 'handlebars' }));

  const latencies: number[] = [];
  for (let round = 2; round <= 4; round++) {
    latencies.push(await victimLatency(`v${round}`));
    await new Promise((r) => setTimeout(r, 2000));
  }
  t.comment(`victim latency with ${HOSTILE_GO + 1} hostile ExternalSecrets: ${latencies.map((l) => l.toFixed(0)).join(', ')} ms`);
  for (const l of latencies) t.ok(l < Math.max(10_000, baseline * 4), `a store change reached the victim's Secrets in ${l.toFixed(0)} ms`);
});

t.test('every hostile ExternalSecret is Ready=False naming its template, without values', async (t) => {
  const names = [...Array.from({ length: HOSTILE_GO }, (_, i) => `loop-${i}`), 'hb-bomb'];
  for (const name of names) {
    const got = await templateRefused(evil.namespace, name, 240_000);
    const c = got.status?.conditions?.find((x) => x.type === 'Ready');
    const msg = c?.message ?? '';
    t.ok(c?.reason === 'TemplateTimeout' || LIMIT_REFUSAL.test(msg), `${name}: refused at a limit (${c?.reason}: ${msg})`);
    t.match(msg, `ExternalSecret ${name} target.template.data.password`, `${name}: the message names the template`);
    t.notMatch(msg, CANARY);
  }
  const secrets = await evil.core.listNamespacedSecret({ namespace: evil.namespace });
  t.notOk(secrets.items.some((s) => s.metadata?.name?.startsWith('loop-') || s.metadata?.name === 'hb-bomb'), 'no Secret written for a hostile one');
  t.ok((await ctl.counter('esi_controller_render_busy_total')) > 0, 'the hostile namespace was held to one render at a time');
});

t.test('/healthz answered all along; the Lease was kept; no value in the logs', async (t) => {
  await health.stop();
  const { probes, failures, slowestMs } = health.stats;
  t.comment(`/healthz: ${probes} probes, ${failures} failed, slowest ${slowestMs.toFixed(0)} ms`);
  t.ok(probes > 20, 'probed throughout');
  t.equal(failures, 0, 'every probe answered 200 within 2 s');
  t.equal(ctl.child.exitCode, null, 'the controller still runs (it exits when it loses its Lease)');
  t.notMatch(ctl.output(), 'lease not renewed', 'the Lease was renewed in time');
  t.notMatch(ctl.output(), CANARY, 'no hostile value in the logs');
});

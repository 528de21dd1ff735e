// Self-managed certificates against the real apiserver: several replicas racing to
// bootstrap end up sharing one Secret and one CA, the webhook configuration carries that CA,
// and with second-scale lifetimes the serving cert and the CA rotate while a client that
// trusts only the published caBundle keeps connecting to every replica.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import t from 'tap';
import { selfManagedTlsSource, type SelfManagedTlsOptions, type SelfManagedTlsSource } from '../../../certs/bootstrap.js';
import { parseCert, splitPemBundle } from '../../../certs/pki.js';
import { createNamespace } from '../../support/kube.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import {
  closeServer, createDummyWebhookConfig, createLocalWebhookConfig, createPodThroughWebhooks, probe, publishedBundles,
  seenAnnotation, sleep, startHttps,
} from '../../support/certs.js';

const cp = await useControlPlane(t);
const logger = pino({ level: process.env.ESI_TEST_LOG ?? 'warn' });
const SECRET = 'esi-webhook-tls';

function startReplicas(n: number, base: Omit<SelfManagedTlsOptions, 'logger'>): Promise<SelfManagedTlsSource[]> {
  return Promise.all(Array.from({ length: n }, (_, i) =>
    selfManagedTlsSource({ ...base, logger: logger.child({ replica: i }) })));
}

async function secretsIn(kc: KubeConfig, namespace: string) {
  return (await kc.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace })).items;
}

const fp = (pem: string | undefined) => parseCert(pem)?.x509.fingerprint256;
const fps = (bundle: string) => splitPemBundle(bundle).map(fp);

t.test('three replicas starting together share one Secret and one CA', async (t) => {
  const namespace = await createNamespace(cp.kc, 'certs', t);
  const webhookConfigName = await createDummyWebhookConfig(cp.kc, t);
  const replicas = await startReplicas(3, {
    kc: cp.kc, namespace, secretName: SECRET, serviceName: 'esi-webhook', webhookConfigName,
    extraDNS: ['localhost'], extraIPs: ['127.0.0.1'], checkIntervalSeconds: 1,
  });
  t.teardown(() => Promise.all(replicas.map((r) => r.stop())));

  const [first, ...others] = replicas.map((r) => r.current());
  for (const m of others) {
    t.equal(m.caPem, first!.caPem, 'same CA bundle');
    t.equal(fp(m.certPem), fp(first!.certPem), 'same serving certificate');
  }
  t.ok(replicas.every((r) => r.ready()));

  const secrets = (await secretsIn(cp.kc, namespace)).filter((s) => s.metadata?.name === SECRET);
  t.equal(secrets.length, 1, 'the Secret exists once');
  const secret = secrets[0]!;
  t.equal(secret.type, 'kubernetes.io/tls');
  t.same(Object.keys(secret.data ?? {}).sort(), ['ca-bundle.crt', 'ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
  const caCrt = Buffer.from(secret.data!['ca.crt']!, 'base64').toString('utf8');
  t.same(fps(first!.caPem), [fp(caCrt)], 'the bundle is exactly the Secret\'s CA');

  const bundles = await publishedBundles(cp.kc, webhookConfigName);
  t.equal(bundles.length, 2);
  for (const b of bundles) t.same(fps(b), [fp(caCrt)], 'each webhook\'s caBundle is that CA');

  const published = bundles[0]!;
  const servers = await Promise.all(replicas.map((r) => startHttps(r)));
  t.teardown(() => Promise.all(servers.map((s) => closeServer(s.server))));
  for (const s of servers) {
    const res = await probe(s.port, published);
    t.ok(res.ok, `replica on :${s.port} trusted via the published caBundle (${res.error ?? 'ok'})`);
  }
  const stranger = (await selfManagedCaOfAnotherNamespace(t)).caPem;
  const refused = await probe(servers[0]!.port, stranger);
  t.notOk(refused.ok, 'a client trusting another CA is refused');
});

/** A CA from an unrelated bootstrap, to show the client really checks the chain. */
async function selfManagedCaOfAnotherNamespace(t: { teardown(fn: () => unknown): void }) {
  const namespace = await createNamespace(cp.kc, 'certs-other', t);
  const src = await selfManagedTlsSource({
    kc: cp.kc, namespace, secretName: SECRET, serviceName: 'x', webhookConfigName: 'does-not-exist', logger,
  });
  await src.stop();
  return src.current();
}

t.test('a missing webhook configuration is patched once it appears', async (t) => {
  const namespace = await createNamespace(cp.kc, 'certs', t);
  const name = `esi-certs-late-${namespace}`;
  const src = await selfManagedTlsSource({
    kc: cp.kc, namespace, secretName: SECRET, serviceName: 'esi-webhook', webhookConfigName: name,
    logger, checkIntervalSeconds: 1,
  });
  t.teardown(() => src.stop());
  t.ok(src.ready(), 'ready without the configuration');
  await sleep(1500); // a few checks run while the configuration is missing
  await createDummyWebhookConfig(cp.kc, t, name);
  const published = (b: string[]) => b.length > 0 && b.every((pem) => pem === src.current().caPem);
  let bundles = await publishedBundles(cp.kc, name);
  for (let i = 0; i < 40 && !published(bundles); i++) {
    await sleep(250);
    bundles = await publishedBundles(cp.kc, name);
  }
  t.ok(published(bundles), 'caBundle published after the configuration appeared');
});

interface Observation {
  atMs: number;
  bundle: (string | undefined)[];
  serials: (string | undefined)[];
  issuers: (string | undefined)[];
  failures: string[];
}

/** One round: what a client trusting the published caBundle sees, and a pod through the apiserver. */
async function observe(kc: KubeConfig, configName: string, ports: number[], namespace: string, atMs: number): Promise<Observation> {
  const [bundle] = await publishedBundles(kc, configName);
  const results = await Promise.all(ports.map((port) => probe(port, bundle ?? '')));
  const failures = results.filter((r) => !r.ok).map((r) => `client: ${r.error ?? 'HTTP error'}`);
  try {
    const annotations = await createPodThroughWebhooks(kc, namespace, namespace);
    const missing = ports.map((_, i) => seenAnnotation(i)).filter((a) => annotations[a] !== 'seen');
    if (missing.length) failures.push(`apiserver: pod admitted without ${missing.join(', ')}`);
  } catch (err) {
    failures.push(`apiserver: ${(err as { body?: string }).body ?? String(err)}`);
  }
  return {
    atMs, bundle: fps(bundle ?? ''), failures,
    serials: results.map((r) => r.serial), issuers: results.map((r) => r.issuer),
  };
}

t.test('rotation with short lifetimes keeps every replica reachable, by clients and the apiserver', async (t) => {
  const namespace = await createNamespace(cp.kc, 'certs-rot', t);
  const webhookConfigName = `esi-certs-rot-${namespace}`;
  // The configuration appears only after the replicas started (as with a chart that
  // creates it alongside the Deployment): they bootstrap anyway and publish once it exists.
  // Lifetimes are seconds here, so the margin a rotation has before the old certificate
  // expires is seconds too: renewing at a third of the lifetime leaves 5 s of an 8 s
  // certificate for the new CA's propagation (1 s) plus the machine's lag. At 2/3 (the
  // product's default, which leaves months in real lifetimes) a loaded machine's few
  // seconds of lag outlasted the 2.7 s left, and clients saw the expired certificate.
  const replicas = await startReplicas(3, {
    kc: cp.kc, namespace, secretName: SECRET, serviceName: 'esi-webhook', webhookConfigName,
    extraDNS: ['localhost'], extraIPs: ['127.0.0.1'],
    caValiditySeconds: 27, certValiditySeconds: 8, renewBeforeRatio: 1 / 3,
    checkIntervalSeconds: 1, propagationDelaySeconds: 1,
  });
  t.teardown(() => Promise.all(replicas.map((r) => r.stop())));
  const servers = await Promise.all(replicas.map((r, i) => startHttps(r, i)));
  t.teardown(() => Promise.all(servers.map((s) => closeServer(s.server))));
  const ports = servers.map((s) => s.port);
  await createLocalWebhookConfig(cp.kc, t, webhookConfigName, ports, namespace);
  const firstCa = fp(replicas[0]!.current().caPem);
  const firstCaCn = parseCert(replicas[0]!.current().caPem)?.subject.replace(/^CN=/, '');
  for (let i = 0; i < 40; i++) {
    const bundles = await publishedBundles(cp.kc, webhookConfigName);
    if (bundles.every((b) => fps(b)[0] === firstCa)) break;
    await sleep(250);
  }

  const start = Date.now();
  const seen: Observation[] = [];
  while (Date.now() - start < 34_000) {
    seen.push(await observe(cp.kc, webhookConfigName, ports, namespace, Date.now() - start));
    await sleep(150);
  }

  const failed = seen.filter((o) => o.failures.length > 0);
  t.same(failed.map((o) => `+${o.atMs}ms ${o.failures.join('; ')}`), [], `no failure in ${seen.length} rounds`);
  const serials = new Set(seen.flatMap((o) => o.serials));
  t.ok(serials.size >= 6, `serving certificate rotated (${serials.size} serials seen)`);
  const activeCas = new Set(seen.map((o) => o.bundle[0]));
  t.ok(activeCas.size >= 2, `CA rotated (${activeCas.size} CAs seen as active)`);
  const overlap = seen.filter((o) => o.bundle.length >= 2 && o.bundle.includes(firstCa));
  t.ok(overlap.length > 0, 'the first CA stayed in the bundle next to its successor');
  t.ok(overlap.some((o) => o.issuers.some((i) => i === firstCaCn)), 'certs from the first CA were served during the overlap');
  t.ok(overlap.some((o) => o.issuers.some((i) => i !== firstCaCn)), 'certs from the new CA were served during the overlap');
  t.notOk(seen.at(-1)!.bundle.includes(firstCa), 'the first CA left the bundle once it expired');
  t.ok(servers.every((s) => s.reloads() >= 3), `each replica hot-reloaded (${servers.map((s) => s.reloads()).join(', ')})`);

  const secrets = (await secretsIn(cp.kc, namespace)).filter((s) => s.metadata?.name === SECRET);
  t.equal(secrets.length, 1, 'still one Secret');
});

// Next to External Secrets Operator, by default: on a private control plane whose
// external-secrets.io CRDs were not installed by ESI (as when ESO's chart installed them),
// `esi controller` with no --claim-unclassed leaves stores without spec.controller alone
// (ESO serves them; two writers would fight over each Secret), serves its own class, and
// says why in its log; --claim-unclassed=true serves them. With ESI's CRDs (the shared
// plane of every other controller test) the default serves them, as before.
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { installCrds, loadCrds } from '../../../src/api/crds.js';
import { createNamespace } from '../../support/kube.js';
import { startControlPlane } from '../../support/platform/control-plane-process.js';
import { create, externalSecret, fakeStore, getES, ready, startController, type Env } from '../../support/fixtures/controller.js';

const cp = await startControlPlane(await mkdtemp(join(tmpdir(), 'esi-coexist-')));
t.teardown(() => cp.stop());
const kc = new KubeConfig();
kc.loadFromFile(cp.kubeconfigPath);
// The same schemas, without ESI's mark: what a cluster with ESO's CRDs looks like to the probe.
const crds = (await loadCrds()).map((c) => {
  delete c.metadata!.labels!['app.kubernetes.io/part-of'];
  return c;
});
await installCrds(kc, { crds });
const env: Env = { cp: { ...cp, kc } as unknown as Env['cp'], kc, core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi), cls: 'esi' };
const ns = await createNamespace(kc, 'coexist', t);
const one = { data: [{ secretKey: 'v', remoteRef: { key: 'k' } }] };
await create(env, ns, 'secretstores', { kind: 'SecretStore', metadata: { name: 'eso-owned' }, spec: { provider: { fake: { data: [{ key: 'k', value: 'from-eso-store' }] } } } });
await create(env, ns, 'secretstores', fakeStore('esi-owned', 'esi', [{ key: 'k', value: 'from-esi-store' }]));
await create(env, ns, 'externalsecrets', externalSecret('unclassed', 'eso-owned', one));
await create(env, ns, 'externalsecrets', externalSecret('classed', 'esi-owned', one));

t.test('default (auto) with CRDs ESI did not install: its own class only, and the log says why', async (t) => {
  const ctl = await startController(cp.kubeconfigPath, ['--leader-elect=false'], t);
  await ready(env, ns, 'classed', 'True');
  // The classed one synced, so the unclassed one was seen by the same caches and left alone.
  await new Promise((r) => setTimeout(r, 1500));
  t.same((await getES(env, ns, 'unclassed')).status ?? {}, {}, 'no status written on the store ESO serves');
  t.notOk(await env.core.readNamespacedSecret({ namespace: ns, name: 'unclassed' }).catch(() => undefined), 'no Secret written for it');
  const line = ctl.output().split('\n').find((l) => l.includes('not serving stores without spec.controller')) ?? '';
  t.match(line, /not installed by ESI.*pass --claim-unclassed=true/, 'one log line says so, why, and what to pass');
  await ctl.stop();
});

t.test('--claim-unclassed=true serves them (after ESO is gone)', async (t) => {
  const ctl = await startController(cp.kubeconfigPath, ['--leader-elect=false', '--claim-unclassed=true'], t);
  await ready(env, ns, 'unclassed', 'True');
  const s = await env.core.readNamespacedSecret({ namespace: ns, name: 'unclassed' });
  t.equal(Buffer.from(s.data!.v!, 'base64').toString(), 'from-eso-store');
  await ctl.stop();
});

t.test("the default with ESI's own CRDs serves unclassed stores too", async (t) => {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const crd = await api.readCustomResourceDefinition({ name: 'externalsecrets.external-secrets.io' });
  crd.metadata!.labels = { ...crd.metadata!.labels, 'app.kubernetes.io/part-of': 'esi' };
  await api.replaceCustomResourceDefinition({ name: crd.metadata!.name!, body: crd });
  await create(env, ns, 'externalsecrets', externalSecret('unclassed-2', 'eso-owned', one));
  const ctl = await startController(cp.kubeconfigPath, ['--leader-elect=false'], t);
  await ready(env, ns, 'unclassed-2', 'True');
  t.match(ctl.output().split('\n').find((l) => l.includes('serving stores without spec.controller too')), /CRD is ESI's/);
  await ctl.stop();
});

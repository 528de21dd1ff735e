// A service mesh's injector running after ESI on the real kube-apiserver: it appends its
// proxy as a native sidecar behind ESI's agent; the apiserver reinvokes ESI
// (reinvocationPolicy IfNeeded), which moves the agent behind the proxy so the agent starts
// with network (docs/decisions/0001-opt-in-label-and-annotations.md).
import { CoreV1Api } from '@kubernetes/client-node';
import t from 'tap';
import { MESH_PROXY, startMeshWebhook } from '../../support/mesh-webhook.js';
import { labelledPod, setupWebhook } from '../../support/fixtures/webhook.js';

const fx = await setupWebhook(t);
const mesh = await startMeshWebhook(fx.kc, fx.runId, t);
const core = fx.kc.makeApiClient(CoreV1Api);

for (const mode of ['native-sidecar', 'init-only', 'sidecar'] as const) {
  t.test(`${mode}: the stored pod has the mesh proxy before ESI's agent, and one agent`, async (t) => {
    const name = `meshed-${mode}`;
    const seenBefore = mesh.seen.length;
    await fx.createPod(labelledPod(name, { 'esi.dev/secrets': 'db', 'esi.dev/mode': mode }, { initContainers: [{ name: 'setup', image: 'registry.example/setup:1' }] }));
    const stored = await core.readNamespacedPod({ name, namespace: fx.ns });
    const ours = mode === 'sidecar' ? 'esi-agent-init' : 'esi-agent';
    t.same(stored.spec!.initContainers!.map((c) => c.name), ['setup', MESH_PROXY, ours], 'the agent starts after the mesh proxy');
    t.equal(mesh.seen.length, seenBefore + 1, 'the mesh webhook was called once');
    t.ok(mesh.seen.at(-1)!.includes(ours), 'and ran after ESI (it saw the agent already injected)');
    const all = [...stored.spec!.initContainers!, ...stored.spec!.containers].map((c) => c.name);
    t.equal(all.filter((n) => n === 'esi-agent').length, 1, 'exactly one agent');
    t.same(stored.spec!.containers.map((c) => c.name), mode === 'sidecar' ? ['app', 'esi-agent'] : ['app']);
    t.equal(stored.spec!.volumes!.filter((v) => v.name === 'esi-secrets').length, 1, 'one secrets volume');
    t.equal(stored.metadata!.annotations!['esi.dev/injected'], mode);
  });
}

t.test('a pod whose proxy is already before the agent is stored as injected', async (t) => {
  const stored = await fx.createPod(labelledPod('premeshed', { 'esi.dev/secrets': 'db' }, { initContainers: [{ name: MESH_PROXY, image: 'registry.example/mesh-proxy:1', restartPolicy: 'Always' }] }));
  t.same(stored.spec!.initContainers!.map((c) => c.name), [MESH_PROXY, 'esi-agent'], 'injected after it at once; the mesh adds nothing');
});

// Pure tests, no cluster: re-admission after a mesh injector ran behind ESI
// (docs/decisions/0001-opt-in-label-and-annotations.md) and the agent's security
// context under platforms that assign the user or enforce Pod Security "restricted"
// (docs/install.md, "The injected agent: Pod Security and OpenShift"). test/e2e/webhook/mesh.test.ts and
// restricted.test.ts show the same on a real kube-apiserver.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import fastJsonPatch from 'fast-json-patch';
import t from 'tap';
import { admit, type AdmitContext } from '../../webhook/admission.js';
import { ManifestLookup } from '../../webhook/inject-cmd.js';
import { parseRunAsUser, placeAfterNativeSidecars } from '../../webhook/mutate.js';

const NS = 'team-a';
const objects = (ns: object = { metadata: { name: NS } }) => [
  { apiVersion: 'v1', kind: 'Namespace', ...ns },
  { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'fake', namespace: NS }, spec: { provider: { fake: { data: [{ key: 'k', value: 'v' }] } } } },
  { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db', namespace: NS },
    spec: { secretStoreRef: { name: 'fake', kind: 'SecretStore' }, data: [{ secretKey: 'k', remoteRef: { key: 'k' } }] } },
];

const ctx = (extra: Partial<AdmitContext> & { ns?: object } = {}): AdmitContext => ({
  namespace: NS, lookup: new ManifestLookup(objects(extra.ns)), resolve: {}, agent: { image: 'esi:test', defaultTokenAudience: 'esi' }, ...extra,
});

function pod(annotations: Record<string, string> = {}, spec: Partial<V1Pod['spec']> = {}): V1Pod {
  return { metadata: { name: 'p', labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': 'db', ...annotations } },
    spec: { containers: [{ name: 'app', image: 'app' }], ...spec } };
}

function injected(p: V1Pod, c = ctx()): V1Pod {
  const out = admit(p, c);
  if (out.kind !== 'mutated') throw new Error(`expected an injection, got ${JSON.stringify(out)}`);
  return out.pod;
}

/** What a mesh injector running after ESI does: append its proxy as a native sidecar. */
const withMesh = (p: V1Pod): V1Pod => ({
  ...p, spec: { ...p.spec!, initContainers: [...(p.spec!.initContainers ?? []), { name: 'istio-proxy', image: 'proxy', restartPolicy: 'Always' }] },
});
const initNames = (p: V1Pod) => p.spec!.initContainers!.map((c) => c.name);
const agentOf = (p: V1Pod): V1Container => [...p.spec!.initContainers!, ...p.spec!.containers].find((c) => c.name === 'esi-agent')!;

t.test('re-admission of an injected pod', async (t) => {
  t.test('nothing new since injection: no patch', async (t) => {
    t.same(admit(injected(pod()), ctx()), { kind: 'unchanged' });
    const p = injected(pod({}, { initContainers: [{ name: 'linkerd-proxy', image: 'l', restartPolicy: 'Always' }, { name: 'migrate', image: 'm' }] }));
    t.same(initNames(p), ['linkerd-proxy', 'esi-agent', 'migrate'], 'injected after the native sidecar present at injection');
    t.same(admit(p, ctx()), { kind: 'unchanged' }, 'a sidecar that was already before the agent changes nothing');
    t.same(admit({ ...p, spec: { ...p.spec!, initContainers: [...p.spec!.initContainers!, { name: 'late-init', image: 'x' }] } }, ctx()), { kind: 'unchanged' },
      'a plain init container appended after the agent changes nothing');
  });

  for (const mode of ['native-sidecar', 'init-only', 'sidecar'] as const) {
    t.test(`${mode}: a mesh sidecar appended after the agent moves the agent after it`, async (t) => {
      const first = injected(pod({ 'esi.dev/mode': mode }, { initContainers: [{ name: 'setup', image: 's' }] }));
      const meshed = withMesh(first);
      const before = structuredClone(meshed);
      const out = admit(meshed, ctx());
      t.same(meshed, before, 'the input pod is not modified');
      t.equal(out.kind, 'moved');
      if (out.kind !== 'moved') return;
      const ours = mode === 'sidecar' ? 'esi-agent-init' : 'esi-agent';
      t.same(initNames(out.pod), ['setup', 'istio-proxy', ours], 'the agent now starts after the mesh proxy');
      t.same(fastJsonPatch.applyPatch(structuredClone(meshed), out.patch).newDocument, out.pod, 'the patch is the diff');
      t.same({ ...out.pod, spec: { ...out.pod.spec, initContainers: undefined } }, { ...meshed, spec: { ...meshed.spec, initContainers: undefined } },
        'nothing but the init container order changed');
      t.same([...out.pod.spec!.initContainers!].sort((a, b) => a.name.localeCompare(b.name)), [...meshed.spec!.initContainers!].sort((a, b) => a.name.localeCompare(b.name)),
        'the same init containers, unchanged: no second agent, no config change');
      if (mode === 'sidecar') t.same(out.pod.spec!.containers.map((c) => c.name), ['app', 'esi-agent'], 'the long-running sidecar stays where it was');
      t.same(admit(out.pod, ctx()), { kind: 'unchanged' }, 'applied twice: the same result');
      t.equal(placeAfterNativeSidecars(out.pod), out.pod, 'the pure rule returns the pod itself when nothing moves');
    });
  }

  t.test('two mesh sidecars around a plain init container: after the last one', async (t) => {
    const first = injected(pod());
    const p = { ...first, spec: { ...first.spec!, initContainers: [...first.spec!.initContainers!,
      { name: 'istio-init', image: 'i' }, { name: 'istio-proxy', image: 'p', restartPolicy: 'Always' }, { name: 'vault-proxy', image: 'v', restartPolicy: 'Always' as const }] } };
    const out = admit(p, ctx());
    t.same(out.kind === 'moved' ? initNames(out.pod) : out, ['istio-init', 'istio-proxy', 'vault-proxy', 'esi-agent']);
  });
});

t.test('the agent\'s user', async (t) => {
  t.same(agentOf(injected(pod())).securityContext, {
    runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' },
  }, 'by default the image\'s user, fixed');
  const auto = agentOf(injected(pod(), ctx({ agent: { image: 'esi:test', defaultTokenAudience: 'esi', runAsUser: 'auto' } }))).securityContext!;
  t.notOk('runAsUser' in auto || 'runAsGroup' in auto, '"auto" sets neither runAsUser nor runAsGroup');
  t.equal(auto.runAsNonRoot, true, 'runAsNonRoot stays');
  const uid = agentOf(injected(pod(), ctx({ agent: { image: 'esi:test', defaultTokenAudience: 'esi', runAsUser: 1001 } }))).securityContext!;
  t.same([uid.runAsUser, uid.runAsGroup], [1001, 1001], 'an operator-set UID');
  const openshift = ctx({ ns: { metadata: { name: NS, annotations: { 'openshift.io/sa.scc.uid-range': '1000650000/10000' } } } });
  for (const mode of ['native-sidecar', 'init-only', 'sidecar']) {
    const p = injected(pod({ 'esi.dev/mode': mode }), openshift);
    for (const c of [...p.spec!.initContainers!, ...p.spec!.containers].filter((c) => c.name.startsWith('esi-'))) {
      t.notOk(c.securityContext && 'runAsUser' in c.securityContext, `${mode}: ${c.name} has no runAsUser in a namespace with an OpenShift UID range`);
    }
  }
  t.equal(parseRunAsUser('auto'), 'auto');
  t.equal(parseRunAsUser('1000650000'), 1000650000);
  for (const bad of ['0', '-1', '1e3', 'root', '', '4294967295']) t.throws(() => parseRunAsUser(bad), /expected a non-root UID \(1 to 2147483647\) or "auto"/, `"${bad}" refused`);
});

t.test('esi.dev/on-change signal under Pod Security "restricted"', async (t) => {
  const signal = pod({ 'esi.dev/on-change': 'signal:SIGHUP:app' }, { shareProcessNamespace: true });
  const restricted = ctx({ ns: { metadata: { name: NS, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } } });
  const out = admit(signal, restricted);
  t.equal(out.kind, 'denied');
  t.match(out.kind === 'denied' ? out.message : '', /esi\.dev\/on-change: "signal" needs the KILL capability for the agent, which the Pod Security level "restricted" enforced on namespace "team-a" forbids; run the agent as the application's user .* or notify the application over loopback HTTP/);
  t.equal(admit(pod({ 'esi.dev/on-change': 'http://127.0.0.1:8080/reload' }), restricted).kind, 'mutated', 'loopback HTTP is fine under restricted');
  const baseline = ctx({ ns: { metadata: { name: NS, labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } } } });
  t.same(agentOf(injected(signal, baseline)).securityContext!.capabilities, { drop: ['ALL'], add: ['KILL'] }, 'baseline allows KILL');
  t.equal(admit(signal, ctx()).kind, 'mutated', 'a namespace with no level: as before');
});

t.test('esi.dev/on-change signal without CAP_KILL when the agent runs as the apps\' user', async (t) => {
  const restricted = { metadata: { name: NS, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } };
  const auto = (ns: object = restricted) => ctx({ ns, agent: { image: 'esi:test', defaultTokenAudience: 'esi', runAsUser: 'auto' } });
  const shared = pod({ 'esi.dev/on-change': 'signal:SIGTERM:app' }, { shareProcessNamespace: true, securityContext: { runAsUser: 1000770000 } });
  const a = agentOf(injected(shared, auto()));
  t.same(a.securityContext!.capabilities, { drop: ['ALL'] }, 'auto + the pod\'s runAsUser: same user as the app, no capability');
  t.equal(a.securityContext!.runAsUser, undefined);
  const other = pod({ 'esi.dev/on-change': 'signal:SIGTERM:app' }, { shareProcessNamespace: true, securityContext: { runAsUser: 1000770000 }, containers: [{ name: 'app', image: 'app', securityContext: { runAsUser: 1001 } }] });
  t.equal(admit(other, auto()).kind, 'denied', 'an app container under another user still needs KILL: refused under restricted');
  t.same(agentOf(injected(other, auto({ metadata: { name: NS } }))).securityContext!.capabilities, { drop: ['ALL'], add: ['KILL'] }, 'and gets KILL where allowed');
  const unknown = pod({ 'esi.dev/on-change': 'signal:SIGTERM:app' }, { shareProcessNamespace: true });
  t.equal(admit(unknown, auto()).kind, 'denied', 'no runAsUser anywhere: the users cannot be known to match');
  const fixed = pod({ 'esi.dev/on-change': 'signal:SIGTERM:app' }, { shareProcessNamespace: true, containers: [{ name: 'app', image: 'app', securityContext: { runAsUser: 65532 } }] });
  t.same(agentOf(injected(fixed, ctx({ ns: restricted }))).securityContext!.capabilities, { drop: ['ALL'] }, 'an app running as the agent\'s fixed user: no capability');
});

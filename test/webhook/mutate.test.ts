// The pod mutation without a cluster (webhook/mutate.ts): pure, its patch the diff, canonical
// JSON, the agent placed after a mesh proxy.
import t from 'tap';
import { admit } from '../../webhook/admission.js';
import { ctx, pod } from '../support/fixtures/admission.js';

t.test('the mutation is pure and the patch is its diff', async (t) => {
  const input = pod({ 'esi.dev/secrets': 'es-vault,es-vault2' });
  const before = structuredClone(input);
  const out = admit(input, ctx());
  t.same(input, before, 'the input pod is not modified');
  t.equal(out.kind, 'mutated');
  if (out.kind !== 'mutated') return;
  const fjp = (await import('fast-json-patch')).default;
  t.same(fjp.applyPatch(structuredClone(input), out.patch).newDocument, out.pod, 'applying the patch gives the mutated pod');
  const creds = out.pod.spec!.volumes!.filter((v) => v.secret);
  t.equal(creds.length, 1, 'two stores using one Secret share one volume');
  t.same(creds[0]!.secret!.items, [{ key: 'secret-id', path: 'secret-id' }, { key: 'token', path: 'token' }], 'with exactly the keys referenced');
  t.same(admit(out.pod, ctx()), { kind: 'unchanged' }, 'admitting the result again changes nothing');
  // The mutated pod shares what it does not change with the input: a deeply frozen input
  // fails loudly on any write into it, and gives the same patch.
  const deepFreeze = <T>(o: T): T => {
    if (o && typeof o === 'object') for (const v of Object.values(Object.freeze(o))) deepFreeze(v);
    return o;
  };
  const again = admit(deepFreeze(structuredClone({ ...input, spec: { ...input.spec!, initContainers: [{ name: 'setup', image: 'busybox', volumeMounts: [{ name: 'x', mountPath: '/x' }] }] } })), ctx());
  t.equal(again.kind, 'mutated', 'a frozen pod with init containers and mounts is mutated without a write into it');
  t.same(admit(deepFreeze(structuredClone(input)), ctx()), out, 'a frozen input gives the same result');
});

t.test('canonical JSON sorts keys at every level and matches JSON.parse', async (t) => {
  const { canonicalJson } = await import('../../webhook/mutate.js');
  const v = { b: [3, { z: 1, a: 'x"y' }, null], a: { d: undefined, c: true }, e: 'é' };
  t.equal(canonicalJson(v), '{"a":{"c":true},"b":[3,{"a":"x\\"y","z":1},null],"e":"é"}');
  t.same(JSON.parse(canonicalJson(v)), JSON.parse(JSON.stringify(v)));
});

t.test('the agent starts after a mesh proxy that follows its own init container', async (t) => {
  const p = pod({ 'esi.dev/secrets': 'es-vault' });
  p.spec!.initContainers = [{ name: 'istio-init', image: 'i' }, { name: 'istio-proxy', image: 'p', restartPolicy: 'Always' }, { name: 'migrate', image: 'm' }];
  const out = admit(p, ctx());
  t.same(out.kind === 'mutated' ? out.pod.spec!.initContainers!.map((c) => c.name) : [], ['istio-init', 'istio-proxy', 'esi-agent', 'migrate']);
});

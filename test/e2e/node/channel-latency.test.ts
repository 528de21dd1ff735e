// The controller → agent channel's hop through the kubelet
// (docs/fleet.md): an annotation patched on a running
// pod reaches the file of its downwardAPI volume, each time, without the pod restarting. The
// delays are printed (the figure of the record), never asserted: the node is shared and busy.
import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { CHANGE_GENERATION_ANNOTATION } from '../../../src/pod-contract/annotations.js';
import { useNode } from '../../support/platform/node/useNode.js';
import { until } from '../../support/platform/until.js';

t.setTimeout(900_000);
const { cp, node } = await useNode(t);
const core = cp.kc.makeApiClient(CoreV1Api);
const ns = await createNamespace(cp.kc, 'probe', t);
const script = "const fs=require('fs');let last='';setInterval(()=>{let v='';try{v=fs.readFileSync('/etc/ann/gen','utf8')}catch(e){v='ERR'};if(v!==last){last=v;console.log('seen '+v+' '+Date.now())}},20)";
await core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'p', annotations: { [CHANGE_GENERATION_ANNOTATION]: 'g0' } }, spec: {
  terminationGracePeriodSeconds: 1,
  containers: [{ name: 'c', image: node.esiImage, imagePullPolicy: 'Never', command: ['/nodejs/bin/node', '-e', script],
    volumeMounts: [{ name: 'ann', mountPath: '/etc/ann' }] }],
  volumes: [{ name: 'ann', downwardAPI: { items: [{ path: 'gen', fieldRef: { fieldPath: `metadata.annotations['${CHANGE_GENERATION_ANNOTATION}']` } }] } }] } } });
await until('running', async () => (await core.readNamespacedPod({ namespace: ns, name: 'p' })).status?.phase === 'Running' || undefined, 180_000);
const delays: number[] = [];
for (let i = 1; i <= Number(process.env.ESI_CHANNEL_PATCHES ?? 10); i++) {
  const sent = Date.now();
  await core.patchNamespacedPod({ namespace: ns, name: 'p', body: { metadata: { annotations: { [CHANGE_GENERATION_ANNOTATION]: `g${i}` } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  const seenAt = await until(`gen ${i}`, async () => {
    const log = await core.readNamespacedPodLog({ namespace: ns, name: 'p', container: 'c' });
    const m = new RegExp(`seen g${i} (\\d+)`).exec(log);
    return m ? Number(m[1]) : undefined;
  }, 300_000);
  delays.push(seenAt - sent);
}
delays.sort((a, b) => a - b);
t.comment(`downwardAPI refresh: p50 ${delays[Math.floor(delays.length / 2)]} ms, max ${delays.at(-1)} ms, n ${delays.length}`);
t.equal(delays.length, Number(process.env.ESI_CHANNEL_PATCHES ?? 10), 'every patched annotation reached the running container through its downwardAPI file');

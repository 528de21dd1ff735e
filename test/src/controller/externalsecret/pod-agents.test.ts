// What an injected pod's agent says, as the controller reads it (src/controller/externalsecret/pod-agents.ts),
// and the agent's termination message (src/agent-config/termination.ts): value-free,
// bounded, and only the agent's own JSON is ever shown.
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { agentState, mountedExternalSecrets, PodAgents } from '../../../../src/controller/externalsecret/pod-agents.js';
import { parseTerminationMessage, terminationMessage } from '../../../../src/agent-config/termination.js';

const pod = (name: string, mode: string, status: V1Pod['status'], ann: Record<string, string> = { 'esi.dev/secrets': 'db,api' }): V1Pod => ({
  metadata: { name, namespace: 'ns', annotations: { ...ann, 'esi.dev/mode': mode, 'esi.dev/injected': mode } }, status,
});
const c = (name: string, s: object) => ({ name, image: 'i', imageID: '', ready: false, restartCount: 0, ...s });

t.test('the ExternalSecrets a pod mounts, by the webhook\'s parser', async (t) => {
  t.same(mountedExternalSecrets(pod('a', 'init-only', {}, { 'esi.dev/secrets': 'db', 'esi.dev/env': 'api:X=x; db' })), ['db', 'api']);
  t.same(mountedExternalSecrets({ metadata: { annotations: { 'esi.dev/secrets': 'db' } } }), [], 'not injected: not counted');
  t.same(mountedExternalSecrets(pod('a', 'init-only', {}, { 'esi.dev/secrets': 'Not A Name' })), [], 'annotations the webhook refuses: none');
});

t.test('agent states by mode', async (t) => {
  t.same(agentState(pod('a', 'native-sidecar', { initContainerStatuses: [c('esi-agent', { started: true, state: { running: {} } })] })), { state: 'ready' });
  t.same(agentState(pod('a', 'native-sidecar', { initContainerStatuses: [c('esi-agent', { started: false, state: { running: {} } })] })), { state: 'pending' });
  t.same(agentState(pod('a', 'init-only', {})), { state: 'pending' }, 'not scheduled yet');
  t.same(agentState(pod('a', 'init-only', { initContainerStatuses: [c('esi-agent', { state: { terminated: { exitCode: 0 } } })] })), { state: 'ready' });
  t.same(agentState(pod('a', 'sidecar', { initContainerStatuses: [c('esi-agent-init', { state: { terminated: { exitCode: 0 } } })] })), { state: 'ready' });
  t.match(agentState(pod('a', 'init-only', { initContainerStatuses: [c('esi-agent', { state: { waiting: { reason: 'ImagePullBackOff' } } })] })), { state: 'failed', why: /cannot start: ImagePullBackOff/ });
  const foreign = agentState(pod('a', 'init-only', { initContainerStatuses: [c('esi-agent', { state: { terminated: { exitCode: 1, reason: 'Error', message: 'password=hunter2' } } })] }));
  t.match(foreign, { state: 'failed', why: /exited with code 1 \(Error\)/ });
  t.notMatch(JSON.stringify(foreign), /hunter2/, 'text that is not the agent\'s message is never shown');
});

t.test('the index changes only on transitions', async (t) => {
  const agents = new PodAgents();
  const pending = pod('p', 'init-only', { phase: 'Pending' });
  t.same(agents.update(pending, 'add').sort(), ['api', 'db']);
  t.same(agents.update({ ...pending, status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] } }, 'update'), [], 'no agent transition: nothing queued');
  t.same(agents.view('ns', 'db'), { total: 1, ready: 0, pending: 'p', failed: [] });
  agents.update(pod('p', 'init-only', { initContainerStatuses: [c('esi-agent', { state: { terminated: { exitCode: 0 } } })] }), 'update');
  t.same(agents.view('ns', 'db'), { total: 1, ready: 1, failed: [] });
  t.same(agents.update(pending, 'delete').sort(), ['api', 'db']);
  t.same(agents.view('ns', 'db'), { total: 0, ready: 0, failed: [] });
});

t.test('termination messages: bounded, value-free, parsed back', async (t) => {
  const err = Object.assign(new Error('fetch failed'), {
    failures: Array.from({ length: 10 }, (_, i) => ({ secret: `es-${i}`, store: 'SecretStore/vault', error: Object.assign(new Error(`store "vault": key k${i} not found\u0007${'x'.repeat(2000)}`), { code: 'NotFound' }) })),
  });
  const msg = terminationMessage('fetch', err);
  t.ok(Buffer.byteLength(msg) <= 4096, 'fits the kubelet\'s 4096 bytes');
  t.notOk(msg.includes('\u0007'), 'no control characters');
  t.match(parseTerminationMessage(msg), /^ExternalSecret "es-0" \(SecretStore\/vault\): NotFound: store "vault": key k0 not found.*\(and \d more\) \[agent fetch\]$/);
  t.match(parseTerminationMessage(terminationMessage('render', new Error('template "x": key "y" missing'))), /^template "x": key "y" missing \[agent render\]$/);
  t.equal(parseTerminationMessage('{"esiAgent":1,'), undefined, 'malformed: nothing');
  t.equal(parseTerminationMessage(undefined), undefined);
});

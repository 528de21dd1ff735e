// Chart-wide agent resources (`esi webhook --agent-cpu-request`, `--agent-memory-request`,
// `--agent-memory-limit`; the chart's agent.resources): applied to every injected agent, a
// pod's own esi.dev/agent-* annotations win, a Go-template agent keeps room for the engine,
// and a bad value stops the webhook with the flag named.
import t from 'tap';
import { admit } from '../../webhook/admission.js';
import { ManifestLookup } from '../../webhook/inject-cmd.js';
import type { AgentResources } from '../../webhook/mutate.js';
import { esiProcess } from '../support/webhook.js';
import { stopEngine } from '../../src/templating/go/runner.js';

t.teardown(stopEngine);
const NS = 'team-a';
const store = { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'fake', namespace: NS }, spec: { provider: { fake: { data: [{ key: 'k', value: 'v' }] } } } };
const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } };
const data = [{ secretKey: 'k', remoteRef: { key: 'k' } }];

function resources(defaults: AgentResources | undefined, annotations: Record<string, string> = {}, spec: Record<string, unknown> = { data }) {
  const es = { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'es', namespace: NS }, spec: { secretStoreRef: { name: 'fake' }, ...spec } };
  const pod = { metadata: { name: 'p', labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': 'es', ...annotations } }, spec: { containers: [{ name: 'app', image: 'app' }] } };
  const agent = { image: 'esi:test', defaultTokenAudience: 'esi', ...(defaults ? { resources: defaults } : {}) };
  const out = admit(pod, { namespace: NS, lookup: new ManifestLookup([namespace, store, es]), resolve: {}, agent });
  if (out.kind !== 'mutated') throw new Error(`not mutated: ${JSON.stringify(out)}`);
  return out.pod.spec?.initContainers?.find((c) => c.name === 'esi-agent')?.resources;
}

t.test('the chart-wide defaults apply to every agent; a pod\'s annotations win', async (t) => {
  t.same(resources(undefined), { requests: { cpu: '5m', memory: '32Mi' }, limits: { memory: '96Mi' } }, 'no defaults: the annotations\' defaults');
  const chart = { cpuRequest: '20m', memoryRequest: '48Mi', memoryLimit: '128Mi' };
  t.same(resources(chart), { requests: { cpu: '20m', memory: '48Mi' }, limits: { memory: '128Mi' } }, 'the chart\'s values');
  t.same(resources({ memoryLimit: '128Mi' }), { requests: { cpu: '5m', memory: '32Mi' }, limits: { memory: '128Mi' } }, 'one value set, the others default');
  t.same(resources(chart, { 'esi.dev/agent-cpu-request': '50m', 'esi.dev/agent-memory-limit': '80Mi' }),
    { requests: { cpu: '50m', memory: '48Mi' }, limits: { memory: '80Mi' } }, 'each annotation the pod sets wins, the rest come from the chart');
});

t.test('a Go-template agent keeps room for the engine unless its pod sets the limit', async (t) => {
  const goTemplate = { data, target: { template: { data: { a: '{{ .k }}' } } } };
  t.equal(resources({ memoryLimit: '128Mi' }, {}, goTemplate)?.limits?.memory, '192Mi', 'a chart limit below the engine\'s need is raised');
  t.equal(resources({ memoryLimit: '256Mi' }, {}, goTemplate)?.limits?.memory, '256Mi', 'a larger chart limit stays');
  t.equal(resources({ memoryLimit: '256Mi' }, { 'esi.dev/agent-memory-limit': '100Mi' }, goTemplate)?.limits?.memory, '100Mi', 'the pod\'s own limit wins');
});

t.test('a bad value stops `esi webhook` before it serves, naming the flag and the rule', async (t) => {
  for (const [flag, value, rule] of [['--agent-memory-limit', '1Ki', /out of the allowed range/], ['--agent-cpu-request', 'lots', /must be a Kubernetes quantity/]] as const) {
    const p = esiProcess(['webhook', '--agent-image', 'esi:x', '--kubeconfig', '/nonexistent', flag, value]);
    const code = await new Promise<number | null>((resolve) => p.child.once('exit', resolve));
    t.not(code, 0, `${flag} ${value} refused`);
    t.match(p.output(), new RegExp(`${flag} "${value}": `), 'the flag and value named');
    t.match(p.output(), rule);
  }
});

// Serve it or refuse it at admission: an ExternalSecret ESI's CRDs accept (because ESO's
// do) but that uses a feature ESI does not serve is refused when a pod mounts it, with the
// field and what ESI supports instead; Go templates (target.template, rewrite transforms)
// are parsed there. One case per unsupported feature; the served ones resolve.
import t, { type Test } from 'tap';
import { ManifestLookup } from '../../webhook/inject-cmd.js';
import { resolve } from '../../webhook/resolve.js';
import type { InjectionRequest } from '../../src/pod-contract/annotations.js';
import { stopEngine } from '../../src/templating/go/runner.js';

t.teardown(stopEngine);
const NS = 'team-a';
const store = { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'fake', namespace: NS }, spec: { provider: { fake: { data: [{ key: 'k', value: 'v' }] } } } };
const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } };
const data = [{ secretKey: 'k', remoteRef: { key: 'k' } }];

function verdict(spec: Record<string, unknown>, annotations?: Record<string, string>) {
  const es = { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'es', namespace: NS, ...(annotations ? { annotations } : {}) }, spec: { secretStoreRef: { name: 'fake' }, ...spec } };
  const lookup = new ManifestLookup([namespace, store, es]);
  return resolve({ namespace: NS, serviceAccountName: 'default' }, { secrets: ['es'] } as unknown as InjectionRequest, lookup);
}

function refused(t: Test, what: string, spec: Record<string, unknown>, expected: RegExp, annotations?: Record<string, string>): void {
  const r = verdict(spec, annotations);
  t.notOk(r.ok, `${what} is refused`);
  if (!r.ok) t.match(r.problems.join('\n'), expected, what);
}

t.test('each unsupported feature is a denial naming the field and the alternative', async (t) => {
  refused(t, 'syncWindows', { data, syncWindows: { kind: 'allow', windows: [{ schedule: '0 2 * * *', duration: '1h' }] } },
    /ExternalSecret "es": spec\.syncWindows is not supported in pods \(the agent refreshes on spec\.refreshInterval.*ESI.s reconciler serves it/);
  refused(t, 'templateFrom configMap', { data, target: { template: { templateFrom: [{ configMap: { name: 'tpl', items: [{ key: 'a' }] } }] } } },
    /spec\.target\.template\.templateFrom\[0\]\.configMap is not supported by ESI .* inline the template as templateFrom\[0\]\.literal/);
  refused(t, 'templateFrom secret', { data, target: { template: { templateFrom: [{ secret: { name: 'tpl', items: [{ key: 'a' }] } }] } } },
    /templateFrom\[0\]\.secret is not supported by ESI/);
  refused(t, 'engineVersion v1', { data, target: { template: { engineVersion: 'v1', data: { a: '{{ .k | toString }}' } } } },
    /engineVersion v1 .* is not supported by ESI; use engineVersion v2/);
  refused(t, 'generator sourceRef', { dataFrom: [{ sourceRef: { generatorRef: { kind: 'Password', name: 'p' } } }] },
    /spec\.dataFrom\[0\]\.sourceRef\.generatorRef is served by ESI's reconciler only \(it writes a Secret\)/);
  // Served by the reconciler; the agent configuration holds one store per ExternalSecret.
  refused(t, 'per-entry store', { data: [{ secretKey: 'k', remoteRef: { key: 'k' }, sourceRef: { storeRef: { name: 'other' } } }] },
    /spec\.data\[0\]\.sourceRef\.storeRef is served by ESI's reconciler only \(it writes a Secret\); the agent mounts an ExternalSecret from one store: move the entry to an ExternalSecret whose spec\.secretStoreRef names SecretStore "other"/);
  refused(t, 'per-entry store in dataFrom', { dataFrom: [{ extract: { key: 'k' }, sourceRef: { storeRef: { kind: 'ClusterSecretStore', name: 'shared' } } }] },
    /spec\.dataFrom\[0\]\.sourceRef\.storeRef is served by ESI's reconciler only/);
  refused(t, 'no store', { secretStoreRef: undefined, data }, /spec\.secretStoreRef\.name is required by ESI/);
});

t.test('checks ESO leaves to its controller are made at admission', async (t) => {
  refused(t, 'empty key', { data: [{ secretKey: 'k', remoteRef: { key: '' } }] }, /spec\.data\[0\]\.remoteRef\.key must not be empty/);
  refused(t, 'dataFrom with two sources', { dataFrom: [{ extract: { key: 'a' }, find: { path: 'p' } }] }, /spec\.dataFrom\[0\] must set exactly one of extract or find \(has extract, find\)/);
  refused(t, 'empty find', { dataFrom: [{ find: {} }] }, /spec\.dataFrom\[0\]\.find must set name\.regexp, path or tags/);
  refused(t, 'rewrite with both', { dataFrom: [{ extract: { key: 'a' }, rewrite: [{ regexp: { source: 'a', target: 'b' }, transform: { template: '{{ .value }}' } }] }] },
    /rewrite\[0\] must set exactly one of regexp, transform or merge \(has regexp, transform\)/);
  refused(t, 'merge JSON without into', { dataFrom: [{ extract: { key: 'a' }, rewrite: [{ merge: { strategy: 'JSON' } }] }] },
    /rewrite\[0\]\.merge\.into must name the key that receives the merged object/);
  refused(t, 'bad rewrite regexp', { dataFrom: [{ extract: { key: 'a' }, rewrite: [{ regexp: { source: '(', target: 'b' } }] }] }, /rewrite\[0\]\.regexp\.source: invalid rewrite regexp/);
  refused(t, 'neither data nor dataFrom', {}, /has neither spec\.data nor spec\.dataFrom/);
});

t.test('Go templates are parsed at admission: the denial names the template and the line', async (t) => {
  refused(t, 'target.template syntax', { data, target: { template: { data: { conf: 'a\nb={{ .k ' } } } },
    /template ExternalSecret es target\.template\.data\.conf line 2: unclosed action/);
  refused(t, 'unknown function', { data, target: { template: { data: { conf: '{{ .k | env }}' } } } },
    /target\.template\.data\.conf line 1: function "env" not defined/);
  refused(t, 'literal syntax', { data, target: { template: { templateFrom: [{ literal: '{{ if .k }}' }] } } },
    /target\.template\.templateFrom\[0\]\.literal line 1: unexpected EOF/);
  refused(t, 'rewrite transform syntax', { dataFrom: [{ extract: { key: 'a' }, rewrite: [{ transform: { template: '{{ .value | nope }}' } }] }] },
    /ExternalSecret "es": spec\.dataFrom\[0\]\.rewrite\[0\]\.transform\.template line 1: function "nope" not defined/);
  refused(t, 'oversized template', { data, target: { template: { data: { big: 'x'.repeat(70_000) } } } }, /template is larger than 65536 bytes/);
});

t.test('served features resolve, with the engine the agent will use', async (t) => {
  const go = verdict({ data, target: { template: { engineVersion: 'v2', data: { conf: 'k={{ .k | upper }}' } } }, dataFrom: [{ extract: { key: 'j' }, rewrite: [{ transform: { template: '{{ .value | lower }}' } }] }] });
  t.ok(go.ok, 'Go template and rewrite transform');
  if (go.ok) t.equal(go.resolved.secrets[0]?.templateEngine, 'go');
  const hb = verdict({ data, target: { template: { data: { conf: 'k={{k}}' } } } }, { 'esi.dev/template-engine': 'handlebars' });
  t.ok(hb.ok, 'handlebars opt-in');
  if (hb.ok) t.equal(hb.resolved.secrets[0]?.templateEngine, 'handlebars');
  // Refused before ESI served them, as ESO documents them.
  const merge = verdict({ dataFrom: [{ extract: { key: 'k' }, rewrite: [{ merge: { into: 'all', strategy: 'JSON' } }] }] });
  t.ok(merge.ok, 'rewrite merge');
  const nul = verdict({ data: [{ secretKey: 'k', remoteRef: { key: 'k', nullBytePolicy: 'Fail' } }], dataFrom: [{ find: { path: 'p', nullBytePolicy: 'Fail' } }] });
  t.ok(nul.ok, 'nullBytePolicy Fail');
  const plain = verdict({ data, target: { manifest: { apiVersion: 'v1', kind: 'ConfigMap' }, creationPolicy: 'CreateOrMerge' } });
  t.ok(plain.ok, 'target fields describe the reconciler\'s object; the agent writes files regardless');
});

t.test('an agent that renders Go templates gets room for the engine, unless the pod sets its limit', async (t) => {
  const { admit } = await import('../../webhook/admission.js');
  const limit = (spec: Record<string, unknown>, annotations: Record<string, string> = {}) => {
    const es = { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'es', namespace: NS }, spec: { secretStoreRef: { name: 'fake' }, ...spec } };
    const pod = { metadata: { name: 'p', labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': 'es', ...annotations } }, spec: { containers: [{ name: 'app', image: 'app' }] } };
    const out = admit(pod, { namespace: NS, lookup: new ManifestLookup([namespace, store, es]), resolve: {}, agent: { image: 'esi:test', defaultTokenAudience: 'esi' } });
    if (out.kind !== 'mutated') throw new Error(`not mutated: ${JSON.stringify(out)}`);
    return out.pod.spec?.initContainers?.find((c) => c.name === 'esi-agent')?.resources?.limits?.memory;
  };
  t.equal(limit({ data }), '96Mi', 'no Go template: the default');
  t.equal(limit({ data, target: { template: { data: { a: '{{ .k }}' } } } }), '192Mi', 'target.template in Go');
  t.equal(limit({ dataFrom: [{ extract: { key: 'k' }, rewrite: [{ transform: { template: '{{ .value }}' } }] }] }), '192Mi', 'rewrite transform');
  t.equal(limit({ data, target: { template: { data: { a: '{{ .k }}' } } } }, { 'esi.dev/agent-memory-limit': '128Mi' }), '128Mi', 'the pod\'s own limit wins');
});

// One contract between webhook and agent: the webhook never admits a pod whose agent
// would refuse its configuration, and the agent's validator refuses what it would
// otherwise ignore (unknown providers, fields, wrong types, paths escaping --root).
import type { V1Pod } from '@kubernetes/client-node';
import t from 'tap';
import { Rng } from '../../bench/lib/rng.js';
import { ConfigError, underRoot, validateAgentConfig } from '../../injector/config.js';
import { admit } from '../../webhook/admission.js';
import { configVerdict, rememberedVerdicts } from '../../webhook/config-verdict.js';
import { fuzzPod } from '../support/adversarial/fuzz.js';
import { admitContext, labelledPod } from '../support/adversarial/world.js';

function configsOf(pod: V1Pod): unknown[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]
    .filter((c) => c.name.startsWith('esi-agent'))
    .map((c) => JSON.parse(c.env!.find((e) => e.name === 'ESI_AGENT_CONFIG')!.value!));
}

t.test('the webhook refuses an on-change URL its agent would refuse', async (t) => {
  const r = admit(labelledPod({ 'esi.dev/secrets': 'db', 'esi.dev/on-change': 'https://localhost:8443/reload' }), admitContext());
  t.equal(r.kind, 'denied');
  t.match(r.kind === 'denied' ? r.message : '', /esi\.dev\/on-change: URL must be an http:\/\/ URL/);
  const ok = admit(labelledPod({ 'esi.dev/secrets': 'db', 'esi.dev/on-change': 'http://localhost:8080/reload' }), admitContext());
  t.equal(ok.kind, 'mutated');
  if (ok.kind === 'mutated') for (const c of configsOf(ok.pod)) t.doesNotThrow(() => validateAgentConfig(c));
});

t.test('the agent refuses what it used to ignore', async (t) => {
  const r = admit(labelledPod({ 'esi.dev/secrets': 'db' }), admitContext());
  const base = r.kind === 'mutated' ? configsOf(r.pod)[0] as Record<string, any> : {}; // eslint-disable-line @typescript-eslint/no-explicit-any
  const cases: [(c: Record<string, any>) => void, string, RegExp][] = [ // eslint-disable-line @typescript-eslint/no-explicit-any
    [(c) => (Object.values(c.stores)[0] as { provider: object }).provider = { nope: {} }, 'provider', /"nope" is not one the agent supports/],
    [(c) => (c.refreshSeconds = '60'), 'refreshSeconds', /must be a number/],
    [(c) => (c.refreshSecond = 60), 'refreshSecond', /not a field of the agent configuration/],
    [(c) => (c.port = 80.5), 'port', /must be a integer|must be an integer/],
    [(c) => (c.refreshSeconds = 30 * 24 * 3600), 'refreshSeconds', /between 1 and 86400/],
    [(c) => (c.outputDir = '/var/run/../../etc'), 'outputDir', /without "\.\." segments/],
    [(c) => (c.secrets[0].data = 'x'), 'secrets[0].data', /must be a list/],
    [(c) => (c.onChange = { type: 'signal', process: 'x', signal: 'SIGKILL' }), 'onChange.signal', /must be one of SIGHUP/],
  ];
  for (const [mutate, field, re] of cases) {
    const c = structuredClone(base);
    mutate(c);
    const err = (() => {
      try {
        validateAgentConfig(c);
      } catch (e) {
        return e as ConfigError;
      }
      return undefined;
    })();
    t.type(err, ConfigError, field);
    t.match(err?.field ?? '', field, field);
    t.match(err?.message ?? '', re, field);
  }
});

t.test('--root confines every configured path', async (t) => {
  t.equal(underRoot('/tmp/r', '/var/run/esi'), '/tmp/r/var/run/esi');
  t.throws(() => underRoot('/tmp/r', '/../../etc'), /resolves outside --root/);
});

t.test('property: every fuzzed pod the webhook admits, the agent accepts', async (t) => {
  const rng = new Rng(0xc0ffee);
  let admitted = 0;
  const failures: string[] = [];
  for (let i = 0; i < 5000; i++) {
    const r = admit(fuzzPod(rng), admitContext());
    if (r.kind !== 'mutated') continue;
    admitted++;
    for (const c of configsOf(r.pod)) {
      try {
        validateAgentConfig(c);
      } catch (err) {
        if (failures.length < 5) failures.push(`#${i}: ${(err as Error).message}`);
      }
    }
  }
  t.same(failures, [], 'no admitted pod has a config its agent refuses');
  t.ok(admitted > 500, `${admitted} of 5000 fuzzed pods were admitted (the property is exercised)`);
});

t.test('the remembered verdict is the validator\'s verdict, and the memory is bounded', async (t) => {
  const r = admit(labelledPod({ 'esi.dev/secrets': 'db' }), admitContext());
  const valid = r.kind === 'mutated' ? configsOf(r.pod)[0] as Record<string, unknown> : {};
  const text = JSON.stringify(valid);
  const bad = JSON.stringify({ ...valid, refreshSeconds: '60' });
  for (let round = 0; round < 2; round++) {
    t.equal(configVerdict(text), '', `valid text, round ${round}`);
    t.equal(configVerdict(bad), 'refreshSeconds: must be a number of seconds between 1 and 86400', `invalid text, round ${round}`);
  }
  // Many distinct texts (a hostile or very varied cluster): valid and invalid alike, each judged
  // on its own text, and no more than the bound remembered.
  for (let i = 0; i < 1000; i++) {
    const v = configVerdict(JSON.stringify({ ...valid, refreshSeconds: i % 2 ? 60 + i : `${i}` }));
    if ((i % 2 === 1) !== (v === '')) t.fail(`text #${i}: verdict ${JSON.stringify(v)}`);
  }
  t.ok(rememberedVerdicts() <= 256, `${rememberedVerdicts()} verdicts remembered`);
  t.equal(configVerdict(bad), 'refreshSeconds: must be a number of seconds between 1 and 86400', 'an evicted text is judged again');
});

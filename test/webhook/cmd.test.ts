// `esi webhook`'s flags (webhook/cmd.ts): the operator-set agent environment.
import t from 'tap';
import { admit } from '../../webhook/admission.js';
import { ctx, pod } from '../support/fixtures/admission.js';

t.test('operator-set agent environment', async (t) => {
  const { parseAgentEnv } = await import('../../webhook/cmd.js');
  t.same(parseAgentEnv(['AWS_ENDPOINT_URL=http://127.0.0.1:5000', 'EMPTY=']), { AWS_ENDPOINT_URL: 'http://127.0.0.1:5000', EMPTY: '' });
  t.throws(() => parseAgentEnv(['ESI_AGENT_CONFIG={}']), /other than ESI_AGENT_CONFIG/);
  t.throws(() => parseAgentEnv(['no-equals']), /expected NAME=VALUE/);
  const out = admit(pod({ 'esi.dev/secrets': 'es-vault' }), ctx({ agent: { image: 'esi:test', defaultTokenAudience: 'esi', env: { B: '2', A: '1' } } }));
  const env = out.kind === 'mutated' ? out.pod.spec!.initContainers![0]!.env! : [];
  t.same(env.map((e) => e.name), ['ESI_AGENT_CONFIG', 'A', 'B'], 'added after the config, sorted');
});

// The agent's lease keeper (injector/leases.ts) against a scripted store whose renewals fail
// on demand: a failed renewal is counted and retried while the lease lasts (the credential is
// not replaced), and no lease id reaches a log line or the metrics. The real-server cases
// (database, PKI, SIGTERM) are in test/e2e/agent/dynamic.test.ts.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startAgent } from '../../injector/agent.js';
import { provider as fakeProvider } from '../../src/providers/fake/index.js';
import { ProviderError, type Lease, type Provider, type SecretsClient } from '../../src/providers/types.js';
import { captureLogger, fakeConfig, httpGet, STORE, tempRoot } from '../support/fixtures/agent.js';
import { until } from '../support/platform/until.js';

const LEASE_SECRET = 'lease-handle-5f0c2e';

function scripted() {
  const state = { minted: 0, renewals: 0, failNext: 0, revoked: [] as string[] };
  const provider: Provider = {
    ...fakeProvider,
    async newClient(ctx) {
      const inner = await fakeProvider.newClient(ctx);
      const leases = {
        async generate() {
          state.minted++;
          return { data: { username: `user-${state.minted}`, password: `pw-${state.minted}` }, lease: { id: `database/creds/app/${LEASE_SECRET}-${state.minted}`, ttlSeconds: 12, renewable: true } };
        },
        async renew(lease: Lease) {
          if (state.failNext > 0) {
            state.failNext--;
            throw new ProviderError('Unreachable', ctx.storeId, 'store is down');
          }
          state.renewals++;
          return { ...lease, ttlSeconds: 12 };
        },
        async revoke(lease: Lease) {
          state.revoked.push(lease.id);
        },
      };
      return Object.assign(Object.create(inner) as SecretsClient, { leases });
    },
  };
  return { state, loadProvider: async () => provider };
}

t.test('a failed renewal is counted and retried; the credential is kept; no lease id in logs or metrics', async (t) => {
  const root = await tempRoot(t);
  const { logger, text } = captureLogger();
  const s = scripted();
  s.state.failNext = 1;
  const config = fakeConfig({ refreshSeconds: 3600, secrets: [], templates: [], dynamicSecrets: [{ name: 'db', store: STORE, path: 'database/creds/app' }] });
  const agent = await startAgent({ config, root, logger, host: '127.0.0.1', loadProvider: s.loadProvider });
  t.teardown(() => agent.stop());
  await agent.ready;
  t.equal(await readFile(join(root, 'var/run/esi/secrets/db/username'), 'utf8'), 'user-1');
  await until('a renewal after the failed one', async () => s.state.renewals >= 1, 30_000);
  const m = (await httpGet(agent.port!, '/metrics')).body;
  t.match(m, /esi_agent_lease_renewals_total\{secret="db",result="failure"\} 1/, 'the failure is counted');
  t.match(m, /esi_agent_lease_renewals_total\{secret="db",result="success"\} [1-9]/, 'then a success');
  t.equal(s.state.minted, 1, 'the credential was not replaced');
  t.equal(await readFile(join(root, 'var/run/esi/secrets/db/username'), 'utf8'), 'user-1');
  agent.stop();
  t.equal(await agent.done, 0);
  t.same(s.state.revoked, [`database/creds/app/${LEASE_SECRET}-1`], 'revoked at exit');
  t.match(text(), /lease renewal failed; retrying while it lasts/);
  t.notOk(text().includes(LEASE_SECRET) || m.includes(LEASE_SECRET), 'no lease id in logs or metrics');
});

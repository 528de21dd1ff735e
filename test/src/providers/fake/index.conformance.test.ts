// The conformance suite against the `fake` provider (its backend is its own spec).
import { pino } from 'pino';
import t from 'tap';
import type { FakeProviderData } from '../../../../src/api/types.js';
import { provider } from '../../../../src/providers/fake/index.js';
import { runConformance } from '../../../support/conformance.js';

const data: FakeProviderData[] = [];
const storeId = 'SecretStore/conformance/fake';
const client = () => provider.newClient({
  storeId, namespace: 'conformance', spec: { data: [...data] }, logger: pino({ level: 'silent' }), timeoutMs: 1000,
  readCredential: async () => new Uint8Array(), serviceAccountToken: async () => '',
});

await runConformance(t, {
  name: 'fake', provider, storeId, client,
  key: (base) => base,
  seed: async (key, value) => {
    data.push({ key, value });
  },
  seedVersions: async (key, first, second) => {
    data.push({ key, value: first, version: 'v1' }, { key, value: second, version: 'v2' }, { key, value: second });
    return ['v1', 'v2'];
  },
  unsupported: {
    'find-tags': 'the fake store has no tags',
    'auth-failure': 'the fake store has no credentials',
    unreachable: 'the fake store is in memory',
  },
});

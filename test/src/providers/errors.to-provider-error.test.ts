// The one error mapper (toProviderError in src/providers/errors.ts).
import t from 'tap';
import { RemoteRefError, toProviderError } from '../../../src/providers/errors.js';
import { ProviderError } from '../../../src/providers/types.js';

t.test('toProviderError: one signature, classified by type and code', async (t) => {
  const scope = { storeId: 'SecretStore/ns/s', op: 'read', key: 'k' };
  const passed = new ProviderError('AuthFailed', 'SecretStore/ns/s', 'no token');
  t.equal(toProviderError(passed, scope), passed, 'a ProviderError passes unchanged');
  t.match(toProviderError(new RemoteRefError('property "p" not found', 'NotFound'), scope), { code: 'NotFound', key: 'k' });
  t.match(toProviderError(Object.assign(new Error('boom value=CANARY'), { code: 'ECONNREFUSED' }), scope), { code: 'Unreachable', message: /cannot connect \(ECONNREFUSED\)/ });
  t.match(toProviderError(Object.assign(new Error('x'), { cause: { code: 'ETIMEDOUT' } }), scope), { code: 'Timeout' }, 'through the cause chain');
  const unknown = toProviderError(new Error('not found: CANARY'), scope);
  t.equal(unknown.code, 'Unknown', 'message text never classifies');
  t.notMatch(unknown.message, /CANARY/, 'and is never passed on');
  t.match(toProviderError({ name: 'Mine' }, scope, () => ({ code: 'Forbidden', message: 'denied' })), { code: 'Forbidden', message: /read: denied/ });
});

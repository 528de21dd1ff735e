// Queue keys, built in one place (src/controller/runtime/keys.ts).
import t from 'tap';
import { keyOf, queueKey } from '../../../../src/controller/runtime/keys.js';

t.test('queue keys: built in one place, read back', async (t) => {
  t.equal(queueKey('es', 'team-a', 'db'), 'es/team-a/db');
  t.equal(queueKey('css', '', 'shared'), 'css/shared');
  t.equal(queueKey('cps', 'ignored', 'x'), 'cps/x', 'cluster-scoped kinds have no namespace');
  t.same(keyOf(queueKey('ps', 'team-a', 'push')), { kind: 'ps', namespace: 'team-a', name: 'push' });
  t.same(keyOf(queueKey('ces', '', 'all')), { kind: 'ces', namespace: '', name: 'all' });
});

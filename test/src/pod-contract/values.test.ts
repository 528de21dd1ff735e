// The annotation value parsers (src/pod-contract/values.ts).
import t from 'tap';
import { parseDuration, parseQuantity } from '../../../src/pod-contract/values.js';

t.test('value parsers', async (t) => {
  t.equal(parseDuration('1h30m'), 5400);
  t.equal(parseDuration('250ms'), 0.25);
  t.throws(() => parseDuration('1d'), /"1d" must be a Go duration/);
  t.throws(() => parseDuration(''), /must be a Go duration/);
  t.equal(parseQuantity('32Mi', { min: 0, max: 1e9 }), '32Mi');
  t.throws(() => parseQuantity('32MB', { min: 0, max: 1e9 }), /Kubernetes quantity/);
});

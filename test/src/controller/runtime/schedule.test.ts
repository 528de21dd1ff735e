// Schedule: the controller's one timer (src/controller/runtime/schedule.ts).
import t from 'tap';
import { Schedule } from '../../../../src/controller/runtime/schedule.js';

t.test('Schedule: one timer, earliest first, rescheduling supersedes', async (t) => {
  const fired: string[] = [];
  const s = new Schedule<string>((k) => fired.push(k));
  const now = Date.now();
  s.at('b', now + 60);
  s.at('a', now + 20);
  s.at('c', now + 40);
  s.at('c', now + 100); // supersedes the earlier entry
  s.sooner('b', 5_000); // already due sooner: unchanged
  await new Promise((r) => setTimeout(r, 200));
  t.same(fired, ['a', 'b', 'c']);
  t.equal(s.size, 0);
  s.stop();
});

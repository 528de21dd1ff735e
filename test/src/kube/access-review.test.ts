// The bounds of MetricsAccessReview (src/kube/access-review.ts) that the real-apiserver test
// (test/e2e/controller/metrics-auth.test.ts) cannot show without thousands of tokens: the cache
// holds at most maxEntries answers, a cached answer costs no review until it expires, one
// token's concurrent requests share one review, reviews in flight are capped (429), and an
// apiserver error is not remembered. The apiserver is a stand-in here, counting its calls.
import t from 'tap';
import { MetricsAccessReview } from '../../../src/kube/access-review.js';
import type { KubeRest } from '../../../src/kube/rest.js';

/** Answers TokenReviews (tokens starting "good" authenticate as user "u-<token>") and
 *  SubjectAccessReviews (users in `allowed`); `gate` holds every answer until released. */
function apiserver(allowed: Set<string>, opts: { gate?: Promise<void>; fail?: boolean } = {}) {
  const calls: string[] = [];
  const rest = {
    async create(path: string, body: { spec: { token?: string; user?: string } }) {
      calls.push(path.includes('tokenreviews') ? 'token' : 'access');
      await opts.gate;
      if (opts.fail) throw new Error('POST: 503 the apiserver is restarting');
      if (path.includes('tokenreviews')) {
        const ok = body.spec.token!.startsWith('good');
        return { status: { authenticated: ok, ...(ok ? { user: { username: `u-${body.spec.token}`, groups: [] } } : {}) } };
      }
      return { status: { allowed: allowed.has(body.spec.user!) } };
    },
  };
  return { rest: rest as unknown as KubeRest, calls };
}

t.test('answers are cached for their time, then asked again', async (t) => {
  let now = 0;
  const api = apiserver(new Set(['u-good1']));
  const review = new MetricsAccessReview(api.rest, { now: () => now, allowTtlMs: 60_000, denyTtlMs: 10_000 });
  t.equal((await review.check('Bearer good1')).status, 200);
  t.equal((await review.check('Bearer good2')).status, 403);
  t.equal(api.calls.length, 4, 'two reviews per new token');
  now = 9_000;
  await review.check('Bearer good1');
  await review.check('Bearer good2');
  t.equal(api.calls.length, 4, 'within their time, no review');
  now = 11_000;
  await review.check('Bearer good2');
  t.equal(api.calls.length, 6, 'a refusal is asked again after 10 s');
  await review.check('Bearer good1');
  t.equal(api.calls.length, 6, 'an allowed answer still holds');
  now = 61_000;
  await review.check('Bearer good1');
  t.equal(api.calls.length, 8, 'and is asked again after 60 s');
  t.equal((await review.check(undefined)).status, 401, 'no header: no review at all');
  t.equal((await review.check('Basic dXNlcjpwYXNz')).status, 401);
  t.equal((await review.check(`Bearer ${'x'.repeat(20_000)}`)).status, 401, 'an oversized token is refused unread');
  t.equal(api.calls.length, 8);
});

t.test('the cache is bounded whatever the number of tokens', async (t) => {
  const api = apiserver(new Set());
  const review = new MetricsAccessReview(api.rest, { maxEntries: 8 });
  const statuses = new Set<number>();
  for (let i = 0; i < 200; i++) statuses.add((await review.check(`Bearer bad-${i}`)).status);
  t.same([...statuses], [401], '200 made-up tokens, each refused');
  t.ok(review.size() <= 8, `${review.size()} answers kept`);
});

t.test('concurrent requests share a review; reviews in flight are capped; errors are not kept', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const api = apiserver(new Set(['u-good']), { gate });
  const review = new MetricsAccessReview(api.rest, { maxInFlight: 2 });
  const same = [review.check('Bearer good'), review.check('Bearer good'), review.check('Bearer good')];
  const other = review.check('Bearer good-other');
  t.equal((await review.check('Bearer good-third')).status, 429, 'a third distinct token waits for a slot: 429');
  release();
  t.same((await Promise.all(same)).map((v) => v.status), [200, 200, 200]);
  t.equal((await other).status, 403);
  t.equal(api.calls.filter((c) => c === 'token').length, 2, 'one TokenReview per distinct token in flight');

  const down = apiserver(new Set(['u-good']), { fail: true });
  const failing = new MetricsAccessReview(down.rest);
  const v = await failing.check('Bearer good');
  t.equal(v.status, 500);
  t.match(v.message, /the apiserver did not answer the review/);
  await failing.check('Bearer good');
  t.equal(down.calls.length, 2, 'the next request asks again');
});

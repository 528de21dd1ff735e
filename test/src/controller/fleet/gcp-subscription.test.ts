// The GCP change subscription's settings and message handling (src/controller/fleet/
// gcp-subscription.ts): flags checked with clear errors, a bearer token never over plain
// HTTP (only the emulator variable selects it, and sends none), messages counted into the
// feed by location and secret, malformed ones dropped with a log line that quotes nothing.
import t from 'tap';
import pino from 'pino';
import { Writable } from 'node:stream';
import { ChangeFeed } from '../../../../src/controller/fleet/feed.js';
import { GcpChangeSubscription, gcpSubscriptionSettings, pubsubEndpoint } from '../../../../src/controller/fleet/gcp-subscription.js';
import { gcpScope } from '../../../../src/controller/fleet/reads.js';

const SUB = 'projects/my-proj/subscriptions/esi-changes';
const flags = (f: Partial<{ subscription: string; endpoint: string; credentialsSecret: string }>) => ({ subscription: '', endpoint: '', credentialsSecret: '', ...f });

t.test('flags', async (t) => {
  t.equal(gcpSubscriptionSettings(flags({}), {}), undefined, 'off by default');
  t.same(gcpSubscriptionSettings(flags({ subscription: SUB, credentialsSecret: 'esi-gcp' }), {}),
    { subscription: SUB, endpoint: 'https://pubsub.googleapis.com', emulator: false, credentialsSecret: 'esi-gcp' });
  t.same(gcpSubscriptionSettings(flags({ subscription: SUB, endpoint: 'https://europe-west1-pubsub.googleapis.com/' }), {})?.endpoint, 'https://europe-west1-pubsub.googleapis.com');
  t.throws(() => gcpSubscriptionSettings(flags({ credentialsSecret: 'x' }), {}), /need --gcp-change-subscription/);
  t.throws(() => gcpSubscriptionSettings(flags({ subscription: 'esi-changes' }), {}), /must be a subscription name: projects\/<project>\/subscriptions\/<subscription>/);
  t.throws(() => gcpSubscriptionSettings(flags({ subscription: 'projects/p1/topics/t1' }), {}), /must be a subscription name/);
  t.throws(() => gcpSubscriptionSettings(flags({ subscription: SUB, credentialsSecret: 'Bad_Name' }), {}), /--gcp-change-credentials-secret/);
  t.throws(() => gcpSubscriptionSettings(flags({ subscription: SUB, endpoint: 'http://pubsub.example' }), {}), /must be an https:\/\/ base URL/, 'no token over plain HTTP');
});

t.test('the emulator variable: plain HTTP, no credentials', async (t) => {
  t.same(pubsubEndpoint('', { PUBSUB_EMULATOR_HOST: '127.0.0.1:8085' }), { endpoint: 'http://127.0.0.1:8085', emulator: true });
  t.throws(() => pubsubEndpoint('', { PUBSUB_EMULATOR_HOST: 'http://x:1/' }), /PUBSUB_EMULATOR_HOST must be host:port/);
});

t.test('messages: changes into the feed, the rest counted, nothing quoted', async (t) => {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, new Writable({ write: (c: Buffer, _e, cb) => { lines.push(c.toString()); cb(); } }));
  const feed = new ChangeFeed();
  const counted: string[] = [];
  let changes = 0;
  const sub = new GcpChangeSubscription({
    subscription: SUB, endpoint: 'http://unused.invalid', headers: async () => ({}), feed, logger,
    changed: () => void changes++, counted: (r) => void counted.push(r),
  });
  const canary = 'gcp-sub-canary-77aa';
  sub.handle({ messageId: '1', attributes: { eventType: 'SECRET_VERSION_ADD', secretId: 'projects/123/secrets/db', dataFormat: 'JSON_API_V1' }, data: Buffer.from(`{"name":"${canary}"}`).toString('base64') });
  sub.handle({ messageId: '2', attributes: { eventType: 'SECRET_VERSION_ADD', secretId: 'projects/123/locations/europe-west1/secrets/db' } });
  sub.handle({ messageId: '3', attributes: { eventType: 'TOPIC_CONFIGURED' } });
  sub.handle({ messageId: '4', attributes: { note: canary } });
  t.same(counted, ['change', 'change', 'ignored', 'malformed']);
  t.equal(changes, 2);
  t.equal(feed.version(gcpScope('global'), 'db'), '1');
  t.equal(feed.version(gcpScope('europe-west1'), 'db'), '1', 'a regional secret of the same id is another source');
  t.equal(feed.version(gcpScope('global'), 'other'), undefined);
  t.equal(feed.version(gcpScope('global'), '*'), '1', 'a find over the location changes with any of its secrets');
  const log = lines.join('');
  t.match(log, /dropped a malformed change notification from the GCP subscription/);
  t.match(log, /"messageId":"4"/, 'named by its message id');
  t.notOk(log.includes(canary), 'no content quoted');
});

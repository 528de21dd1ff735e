// What the controller reads of a GCP Secret Manager notification (src/controller/fleet/
// gcp-events.ts): the event type and the secret's full name from the message's attributes,
// never its data; events that change nothing ignored; malformed messages refused, bounded,
// never quoted. And which secret a store's key names (reads.ts compares them alike).
import t from 'tap';
import { gcpKey, MAX_MESSAGE_BYTES, MalformedEvent, parseGcpMessage } from '../../../../src/controller/fleet/gcp-events.js';

const msg = (eventType: string, secretId?: string, data = '') => ({
  messageId: '42', data: Buffer.from(data).toString('base64'),
  attributes: { eventType, dataFormat: 'JSON_API_V1', ...(secretId ? { secretId } : {}) },
});

t.test('the events that change what a read returns name their secret', async (t) => {
  for (const type of ['SECRET_VERSION_ADD', 'SECRET_VERSION_ENABLE', 'SECRET_VERSION_DISABLE', 'SECRET_VERSION_DESTROY', 'SECRET_VERSION_DESTROY_SCHEDULED', 'SECRET_UPDATE', 'SECRET_DELETE', 'SECRET_CREATE']) {
    t.same(parseGcpMessage(msg(type, 'projects/123456789/secrets/db')), { location: 'global', secret: 'db' }, type);
  }
  t.same(parseGcpMessage(msg('SECRET_VERSION_ADD', 'projects/my-proj/locations/europe-west1/secrets/db')), { location: 'europe-west1', secret: 'db' }, 'a regional secret');
});

t.test('a rotation reminder, the topic test message and unknown types change nothing', async (t) => {
  t.equal(parseGcpMessage(msg('SECRET_ROTATE', 'projects/p1/secrets/db')), undefined);
  t.equal(parseGcpMessage({ messageId: '1', attributes: { eventType: 'TOPIC_CONFIGURED' } }), undefined);
  t.equal(parseGcpMessage(msg('SECRET_SOMETHING_NEW', 'projects/p1/secrets/db')), undefined);
});

t.test('malformed messages are refused, bounded, and never quoted', async (t) => {
  const canary = 'gcp-events-canary-4d1e';
  const bad = [
    {},
    { data: Buffer.from(canary).toString('base64') },
    { attributes: { note: canary } },
    msg('SECRET_VERSION_ADD'),
    msg('SECRET_VERSION_ADD', canary),
    msg('SECRET_VERSION_ADD', `projects/p1/secrets/${canary}/versions/1`),
    msg('SECRET_VERSION_ADD', 'projects/p1/secrets/db', canary.repeat(MAX_MESSAGE_BYTES / canary.length + 1)),
  ];
  for (const m of bad) {
    try {
      parseGcpMessage(m);
      t.fail(`accepted ${JSON.stringify(m).slice(0, 80)}`);
    } catch (err) {
      t.ok(err instanceof MalformedEvent, (err as Error).message);
      t.notOk((err as Error).message.includes(canary), 'the message quotes nothing of it');
    }
  }
});

t.test('a key: a bare id in the store\'s location, or a full name with its own', async (t) => {
  t.same(gcpKey(undefined, 'db'), { location: 'global', secret: 'db' });
  t.same(gcpKey('europe-west1', 'db'), { location: 'europe-west1', secret: 'db' });
  t.same(gcpKey(undefined, 'projects/p1/secrets/db/versions/3'), { location: 'global', secret: 'db' }, 'a version named: its secret');
  t.same(gcpKey('us-east1', 'projects/p1/locations/europe-west1/secrets/db'), { location: 'europe-west1', secret: 'db' });
  t.equal(gcpKey(undefined, 'not/a/secret name'), undefined, 'a key the API would refuse names no source');
});

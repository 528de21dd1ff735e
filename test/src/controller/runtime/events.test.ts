// The Event recorder (src/controller/runtime/events.ts) against a recording API client: what
// `kubectl describe` shows, the same Event not repeated, and a full queue dropping the oldest
// Normal Event rather than a Warning.
import t from 'tap';
import pino from 'pino';
import type { KubeRest } from '../../../../src/kube/rest.js';
import { EventRecorder } from '../../../../src/controller/runtime/events.js';

interface Sent { path: string; body: { metadata: { name: string; namespace: string }; involvedObject: { name: string; kind: string }; type: string; reason: string; message: string; firstTimestamp: string; count: number } }

/** A client whose writes wait until released, so the queue fills behind the first one. */
function recordingRest() {
  const sent: Sent[] = [];
  let release!: () => void;
  let gate = new Promise<void>((r) => (release = r));
  const rest = {
    create: async (path: string, body: Sent['body']) => {
      await gate;
      sent.push({ path, body });
    },
  } as unknown as KubeRest;
  return { rest, sent, open: () => { release(); gate = Promise.resolve(); } };
}

const es = (name: string) => ({ apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', name, namespace: 'team-a', uid: `u-${name}` });

t.test('Events as written: about the object, in its namespace, not repeated', async (t) => {
  const { rest, sent, open } = recordingRest();
  const rec = new EventRecorder(rest, pino({ level: 'silent' }), { component: 'esi-controller', qps: 0 });
  const before = Date.now();
  rec.emit(es('db'), 'Normal', 'Created', 'Created Secret "db" from ClusterSecretStore "s"');
  rec.emit(es('db'), 'Normal', 'Created', 'Created Secret "db" from ClusterSecretStore "s"');
  rec.emit(es('db'), 'Warning', 'SecretSyncedError', 'key "x" not found');
  open();
  while (sent.length < 2 || rec.queued) await new Promise((r) => setImmediate(r));
  t.equal(sent.length, 2, 'the repeat is not written');
  const [a, b] = sent;
  t.equal(a!.path, '/api/v1/namespaces/team-a/events');
  t.match(a!.body, { metadata: { namespace: 'team-a', name: /^db\./ }, involvedObject: { kind: 'ExternalSecret', name: 'db' }, type: 'Normal', reason: 'Created', count: 1 });
  t.ok(Date.parse(a!.body.firstTimestamp) >= Math.floor(before / 1000) * 1000, 'stamped when emitted');
  t.match(b!.body, { type: 'Warning', reason: 'SecretSyncedError', message: 'key "x" not found' });
  t.not(a!.body.metadata.name, b!.body.metadata.name, 'distinct names');
});

t.test('a full queue drops the oldest Normal Event, never a Warning while a Normal is left', async (t) => {
  const { rest, sent, open } = recordingRest();
  const rec = new EventRecorder(rest, pino({ level: 'silent' }), { component: 'esi-controller', qps: 0, queue: 3 });
  rec.emit(es('first'), 'Normal', 'Created', 'm'); // taken by the writer, waiting on the client
  rec.emit(es('w'), 'Warning', 'Failed', 'm');
  for (const n of ['n1', 'n2', 'n3']) rec.emit(es(n), 'Normal', 'Created', 'm');
  t.equal(rec.dropped, 1);
  open();
  while (rec.queued) await new Promise((r) => setImmediate(r));
  while (sent.length < 4) await new Promise((r) => setImmediate(r));
  t.same(sent.map((s) => s.body.involvedObject.name), ['first', 'w', 'n2', 'n3']);
});

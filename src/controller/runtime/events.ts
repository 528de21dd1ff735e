// Kubernetes Events about ExternalSecrets, PushSecrets and stores (`kubectl describe es`
// shows them). Messages name objects, stores, keys and causes, never values. Events are
// informational: a reconcile only queues one and never waits for it. Like client-go's event
// recorder they are bounded, so a burst cannot slow the reconciles (status is the record):
//  - the same Event is not repeated: one is queued only when the reason or message about
//    an object changes (a retry that fails the same way adds nothing);
//  - one writer drains the queue at a global rate (EVENT_QPS, burst EVENT_BURST), so a
//    first sync of 10 000 objects spends its apiserver writes on Secrets and status;
//  - the queue holds at most EVENT_QUEUE Events: when full, the oldest Normal Event is
//    dropped for a new one (Warnings are dropped only when nothing else is left), and the
//    drops are counted.
import type { Logger } from 'pino';
import { UNREAD, type KubeRest } from '../../kube/rest.js';
import { TokenBucket } from './queue.js';
import { EVENTS, resourcePath } from '../../kube/paths.js';

export interface Regarding {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

const EVENT_QPS = 20;
const EVENT_BURST = 100;
const EVENT_QUEUE = 100;

export interface EventRecorderOptions {
  /** `source.component` and `reportingComponent` of the Events. */
  component: string;
  /** Writes per second, burst, queued Events (default EVENT_QPS, EVENT_BURST, EVENT_QUEUE). */
  qps?: number;
  burst?: number;
  queue?: number;
  onDrop?: () => void;
}

/** A queued Event: its body is built when it is written (most queued in a first sync of
 *  thousands are dropped unwritten). */
interface Pending {
  obj: Regarding;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /** When it was emitted (ms). */
  at: number;
  id: string;
  what: string;
}

export class EventRecorder {
  private readonly last = new Map<string, string>();
  private readonly pending: Pending[] = [];
  private readonly bucket: TokenBucket;
  private draining = false;
  private seq = 0;
  /** Events dropped because the queue was full (exported as a metric). */
  dropped = 0;

  constructor(private readonly rest: KubeRest, private readonly logger: Logger, private readonly o: EventRecorderOptions) {
    this.bucket = new TokenBucket(o.qps ?? EVENT_QPS, o.burst ?? EVENT_BURST);
  }

  /** Queues an Event unless the previous one about `obj` said the same. Never throws, never waits. */
  emit(obj: Regarding, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const id = `${obj.kind}/${obj.namespace ?? ''}/${obj.name}`;
    const what = `${type}/${reason}/${message}`;
    if (this.last.get(id) === what) return;
    this.last.set(id, what);
    if (this.pending.length >= (this.o.queue ?? EVENT_QUEUE)) this.dropOne();
    this.pending.push({ obj, type, reason, message, at: Date.now(), id, what });
    if (!this.draining) void this.drain();
  }

  /** The Event's path and body. The apiserver accepts an Event about a cluster-scoped object
   *  only in "default" (or none); `kubectl describe` of a cluster object finds it there. */
  private event(p: Pending): { path: string; body: object } {
    const { obj } = p;
    const ns = obj.namespace ?? 'default';
    const at = new Date(p.at).toISOString();
    return {
      path: resourcePath(EVENTS, { namespace: ns }),
      body: {
        apiVersion: 'v1', kind: 'Event',
        metadata: { name: `${obj.name}.${p.at.toString(16)}${(this.seq++ % 4096).toString(16)}`, namespace: ns },
        involvedObject: { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.name, namespace: obj.namespace, uid: obj.uid },
        type: p.type, reason: p.reason, message: p.message.slice(0, 1024), source: { component: this.o.component },
        firstTimestamp: at, lastTimestamp: at, count: 1, reportingComponent: this.o.component,
      },
    };
  }

  /** Forgets an object (deleted), so a new one with the same name gets its first Event. */
  forget(obj: Regarding): void {
    this.last.delete(`${obj.kind}/${obj.namespace ?? ''}/${obj.name}`);
  }

  /** Events queued and not yet written. */
  get queued(): number {
    return this.pending.length;
  }

  private dropOne(): void {
    const i = this.pending.findIndex((p) => p.type === 'Normal');
    const [gone] = this.pending.splice(i >= 0 ? i : 0, 1);
    // Dropped, so not "the last said": a later identical Event may be recorded.
    if (gone && this.last.get(gone.id) === gone.what) this.last.delete(gone.id);
    this.dropped++;
    this.o.onDrop?.();
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      for (let next = this.pending.shift(); next; next = this.pending.shift()) {
        await this.bucket.take();
        const { path, body } = this.event(next);
        await this.rest.create(path, body, UNREAD).catch((err: unknown) => {
          this.logger.debug({ err: (err as Error).message, object: next!.id }, 'event not recorded');
        });
      }
    } finally {
      this.draining = false;
    }
  }
}

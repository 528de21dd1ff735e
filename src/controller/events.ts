// Kubernetes Events about ExternalSecrets and stores (`kubectl describe es` shows them).
// Messages name objects, stores, keys and causes, never values. The same warning is not
// repeated for every retry: an Event is written when the reason or message changes.
import type { Logger } from 'pino';
import type { KubeRest } from '../kube/rest.js';

export interface Regarding {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

export class EventRecorder {
  private readonly last = new Map<string, string>();
  private seq = 0;

  constructor(private readonly rest: KubeRest, private readonly component: string, private readonly logger: Logger) {}

  /** Emits an Event unless the previous one about `obj` said the same. Never throws. */
  emit(obj: Regarding, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const id = `${obj.kind}/${obj.namespace ?? ''}/${obj.name}`;
    const what = `${type}/${reason}/${message}`;
    if (this.last.get(id) === what) return;
    this.last.set(id, what);
    // The apiserver accepts an Event about a cluster-scoped object only in "default" (or
    // none); `kubectl describe` of a cluster object finds it there.
    const ns = obj.namespace ?? 'default';
    const now = new Date().toISOString();
    const body = {
      apiVersion: 'v1', kind: 'Event',
      metadata: { name: `${obj.name}.${Date.now().toString(16)}${(this.seq++ % 4096).toString(16)}`, namespace: ns },
      involvedObject: { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.name, namespace: obj.namespace, uid: obj.uid },
      type, reason, message: message.slice(0, 1024), source: { component: this.component },
      firstTimestamp: now, lastTimestamp: now, count: 1, reportingComponent: this.component,
    };
    this.rest.create(`/api/v1/namespaces/${ns}/events`, body).catch((err: unknown) => {
      this.logger.debug({ err: (err as Error).message, object: id }, 'event not recorded');
    });
  }

  /** Forgets an object (deleted), so a new one with the same name gets its first Event. */
  forget(obj: Regarding): void {
    this.last.delete(`${obj.kind}/${obj.namespace ?? ''}/${obj.name}`);
  }
}

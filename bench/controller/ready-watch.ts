// "All Ready" as a user sees it: a watch on the ExternalSecrets through the apiserver, counting
// those whose Ready condition is True. The controller's /metrics, scraped once a second, was
// the progress reading before: at 10 000 objects each scrape is megabytes of text the
// controller formats (ESO's per-object series), so the harness charged its own reading to the
// controller's CPU. A watch costs the controller nothing and both trees of a side-by-side run
// the same (the apiserver serialises each event once for all its watchers).
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { API_GROUP } from '../../src/api/types.js';

interface Es {
  metadata?: { namespace?: string; name?: string };
  status?: { conditions?: { type: string; status: string }[] };
}

export class ReadyWatch {
  private readonly ready = new Set<string>();
  private request?: { abort(): void };
  private waiter?: { n: number; resolve: () => void };
  /** Set when the watch ended before stop(): the caller falls back on a list. */
  ended?: string;

  private constructor() {}

  static async start(kc: KubeConfig): Promise<ReadyWatch> {
    const w = new ReadyWatch();
    w.request = await new Watch(kc).watch(`/apis/${API_GROUP}/v1/externalsecrets`, {}, (phase, obj: Es) => w.seen(phase, obj), (err) => {
      w.ended = err ? String((err as Error).message ?? err) : 'closed';
      w.waiter?.resolve();
    });
    return w;
  }

  private seen(phase: string, es: Es): void {
    const key = `${es.metadata?.namespace}/${es.metadata?.name}`;
    const ok = phase !== 'DELETED' && !!es.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    if (ok) this.ready.add(key);
    else this.ready.delete(key);
    if (this.waiter && this.ready.size >= this.waiter.n) this.waiter.resolve();
  }

  get count(): number {
    return this.ready.size;
  }

  /** Resolves once `n` are Ready, or the watch ended (see `ended`). */
  until(n: number): Promise<void> {
    if (this.ready.size >= n || this.ended) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiter = { n, resolve };
    });
  }

  stop(): void {
    this.request?.abort();
  }
}

// A watch of Secrets' metadata only (PartialObjectMetadata) in a set of namespaces, toward the
// kubeconfig's apiserver alone (like rest.ts): names and resource versions cross the wire,
// values never do. The controller's change notifications of the Kubernetes provider use it
// with the controller's own identity (docs/fleet.md, "Notifications"). One list + watch per
// namespace, restarted after a failure; a watch that ends or answers 410 Gone relists.
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { restartDelay } from './informer.js';
import { resourcePath, SECRETS } from './paths.js';

const ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const WATCH_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

interface Meta {
  metadata?: { name?: string; resourceVersion?: string };
}

export interface SourceEvents {
  /** A Secret's resource version, or undefined when it was deleted. */
  changed(namespace: string, name: string, resourceVersion: string | undefined): void;
}

/** Watches Secrets' metadata in a set of namespaces, as asked. */
export class SourceWatch {
  private readonly watches = new Map<string, { stop(): void }>();
  /** `ns/name` → resource version. */
  private readonly versions = new Map<string, string>();
  /** Changes seen per namespace: the version of `*` (every Secret of it, dataFrom.find). */
  private readonly epochs = new Map<string, number>();

  constructor(private readonly kc: KubeConfig, private readonly events: SourceEvents, private readonly logger: Logger) {}

  version(namespace: string, name: string): string | undefined {
    if (name === '*') return String(this.epochs.get(namespace) ?? 0);
    return this.versions.get(`${namespace}/${name}`);
  }

  /** Watches exactly `namespaces` from now on. */
  watchNamespaces(namespaces: ReadonlySet<string>): void {
    for (const [ns, w] of this.watches) if (!namespaces.has(ns)) {
      w.stop();
      this.watches.delete(ns);
    }
    for (const ns of namespaces) if (!this.watches.has(ns)) this.watches.set(ns, this.start(ns));
  }

  stop(): void {
    for (const w of this.watches.values()) w.stop();
    this.watches.clear();
  }

  private set(ns: string, name: string, rv: string | undefined): void {
    const key = `${ns}/${name}`;
    if (this.versions.get(key) === rv) return;
    if (rv === undefined) this.versions.delete(key);
    else this.versions.set(key, rv);
    this.epochs.set(ns, (this.epochs.get(ns) ?? 0) + 1);
    this.events.changed(ns, name, rv);
  }

  private start(ns: string): { stop(): void } {
    let stopped = false;
    let failures = 0;
    let abort: (() => void) | undefined;
    const loop = async (): Promise<void> => {
      while (!stopped) {
        try {
          const list = await this.get<{ metadata?: { resourceVersion?: string }; items?: Meta[] }>(resourcePath(SECRETS, { namespace: ns }), ACCEPT);
          const seen = new Set<string>();
          for (const item of list.items ?? []) {
            const name = item.metadata?.name ?? '';
            seen.add(name);
            this.set(ns, name, item.metadata?.resourceVersion);
          }
          for (const key of [...this.versions.keys()]) if (key.startsWith(`${ns}/`) && !seen.has(key.slice(ns.length + 1))) this.set(ns, key.slice(ns.length + 1), undefined);
          await this.watch(ns, list.metadata?.resourceVersion ?? '', (a) => (abort = a), () => (failures = 0));
        } catch (err) {
          if (stopped) return;
          failures++;
          this.logger.warn({ namespace: ns, err: (err as Error).message }, 'source Secret watch failed; relisting after a delay');
          await new Promise((r) => setTimeout(r, restartDelay(failures)));
        }
      }
    };
    void loop();
    return { stop: () => { stopped = true; abort?.(); } };
  }

  private async options(path: string, accept: string): Promise<{ url: URL; options: RequestOptions }> {
    const url = new URL(path, this.kc.getCurrentCluster()!.server);
    const options: RequestOptions & Record<string, unknown> = {
      method: 'GET', protocol: url.protocol, hostname: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, headers: { accept },
    };
    await this.kc.applyToHTTPSOptions(options);
    return { url, options };
  }

  private async get<T>(path: string, accept: string): Promise<T> {
    const { url, options } = await this.options(path, accept);
    return new Promise<T>((resolve, reject) => {
      const req = (url.protocol === 'http:' ? httpRequest : httpsRequest)({ ...options, timeout: 30_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          if ((res.statusCode ?? 0) >= 300) return reject(new Error(`list secrets: ${res.statusCode}`));
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as T);
          } catch (err) {
            reject(err as Error);
          }
        });
      });
      req.on('timeout', () => req.destroy(new Error('list secrets: no answer within 30 s')));
      req.on('error', reject);
      req.end();
    });
  }

  /** One watch from `rv` until it ends (resolves) or fails (rejects); 410 Gone ends it. */
  private async watch(ns: string, rv: string, onAbort: (a: () => void) => void, healthy: () => void): Promise<void> {
    const { url, options } = await this.options(resourcePath(SECRETS, { namespace: ns, query: { watch: 1, allowWatchBookmarks: true, resourceVersion: rv, timeoutSeconds: 300 } }), WATCH_ACCEPT);
    await new Promise<void>((resolve, reject) => {
      const req = (url.protocol === 'http:' ? httpRequest : httpsRequest)(options, (res) => {
        if ((res.statusCode ?? 0) >= 300) return reject(new Error(`watch secrets: ${res.statusCode}`));
        healthy();
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buf += chunk;
          // A line is one event; bounded: a line longer than 1 MiB is a broken stream.
          if (buf.length > 1 << 20) return req.destroy(new Error('watch secrets: event too large'));
          for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            if (!line.trim()) continue;
            const ev = JSON.parse(line) as { type: string; object: Meta & { code?: number } };
            if (ev.type === 'ERROR') return req.destroy();
            if (ev.type === 'BOOKMARK') continue;
            const name = ev.object.metadata?.name ?? '';
            this.set(ns, name, ev.type === 'DELETED' ? undefined : ev.object.metadata?.resourceVersion);
          }
        });
        res.on('end', resolve);
        res.on('error', reject);
        res.on('close', resolve);
      });
      onAbort(() => req.destroy());
      req.on('error', reject);
      req.end();
    });
  }
}

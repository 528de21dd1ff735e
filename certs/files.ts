// Externally managed certificates (e.g. a cert-manager Certificate whose Secret is mounted
// as a volume). Kubelet updates such volumes by writing a new timestamped directory and
// atomically swapping the `..data` symlink, so we watch the *directories* (a watch on the
// old file would keep pointing at the replaced inode), debounce the burst of events, and
// re-read. A pair that does not load (half-written, key/cert mismatch) never replaces the
// material being served.
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createSecureContext } from 'node:tls';
import { pino, type Logger } from 'pino';
import { keyMatchesCert, parseCert } from './pki.js';
import { MaterialHolder, type TlsMaterial, type TlsSource } from './tls-source.js';

export interface FileTlsOptions {
  certFile: string;
  keyFile: string;
  /** CA bundle to expose as caPem (e.g. cert-manager's ca.crt). Optional. */
  caFile?: string;
  logger?: Logger;
  /** Quiet time after the last file event before re-reading. Default 250 ms. */
  debounceMs?: number;
  /** Re-read this often even without events (watches can miss some). Default 60 s. */
  pollIntervalMs?: number;
}

/** Reads and checks the files; throws with a message naming what is wrong. */
export async function loadTlsFiles(o: Pick<FileTlsOptions, 'certFile' | 'keyFile' | 'caFile'>): Promise<TlsMaterial> {
  const [certPem, keyPem, caPem] = await Promise.all([
    readFile(o.certFile, 'utf8'),
    readFile(o.keyFile, 'utf8'),
    o.caFile ? readFile(o.caFile, 'utf8') : Promise.resolve(''),
  ]);
  if (!parseCert(certPem)) throw new Error(`${o.certFile} does not hold a PEM certificate`);
  if (!keyMatchesCert(certPem, keyPem)) throw new Error(`${o.keyFile} is not the private key of ${o.certFile}`);
  if (o.caFile && !parseCert(caPem)) throw new Error(`${o.caFile} does not hold a PEM certificate`);
  // Last word: would node's TLS stack accept it?
  createSecureContext({ cert: certPem, key: keyPem, ...(caPem ? { ca: caPem } : {}) });
  return { certPem, keyPem, caPem };
}

class FileSource implements TlsSource {
  private readonly holder: MaterialHolder;
  private readonly watchers: FSWatcher[] = [];
  private debounce: NodeJS.Timeout | undefined;
  private poll: NodeJS.Timeout | undefined;
  private reloading: Promise<void> | undefined;
  private stopped = false;
  private readonly debounceMs: number;

  constructor(private readonly o: FileTlsOptions, private readonly log: Logger) {
    this.holder = new MaterialHolder((err) => log.error({ err }, 'TLS change listener failed'));
    this.debounceMs = o.debounceMs ?? 250;
  }

  current(): TlsMaterial { return this.holder.current(); }
  ready(): boolean { return this.holder.ready(); }
  onChange(cb: (m: TlsMaterial) => void): void { this.holder.onChange(cb); }

  async start(): Promise<void> {
    this.holder.set(await loadTlsFiles(this.o));
    this.log.info(this.describe(), 'loaded TLS certificate from files');
    const dirs = new Set([this.o.certFile, this.o.keyFile, this.o.caFile].filter((f): f is string => !!f).map((f) => dirname(f)));
    for (const dir of dirs) this.watchDir(dir);
    this.poll = setInterval(() => this.trigger(0), this.o.pollIntervalMs ?? 60_000);
    this.poll.unref();
  }

  private watchDir(dir: string): void {
    try {
      const w = watch(dir, { persistent: false }, () => this.trigger(this.debounceMs));
      w.on('error', (err) => this.log.warn({ err, dir }, 'certificate directory watch failed; relying on polling'));
      this.watchers.push(w);
    } catch (err) {
      this.log.warn({ err, dir }, 'cannot watch certificate directory; relying on polling');
    }
  }

  /** (Re)starts the debounce timer; the reload runs once events have been quiet for delayMs. */
  private trigger(delayMs: number, attempt = 0): void {
    if (this.stopped) return;
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => { this.reloading = this.reload(attempt); }, delayMs);
    this.debounce.unref();
  }

  private async reload(attempt: number): Promise<void> {
    let m: TlsMaterial;
    try {
      m = await loadTlsFiles(this.o);
    } catch (err) {
      // Mid-swap reads can pair an old cert with a new key: retry a few times before
      // concluding the new files are bad. Either way the old material stays in service.
      const again = attempt < 3;
      this.log[again ? 'warn' : 'error']({ err: String(err), attempt }, again
        ? 'new TLS files do not load yet; retrying, still serving the previous certificate'
        : 'new TLS files are invalid; still serving the previous certificate');
      if (again) this.trigger(this.debounceMs * 2, attempt + 1);
      return;
    }
    if (!this.stopped && this.holder.set(m)) this.log.info(this.describe(), 'reloaded TLS certificate from files');
  }

  private describe(): Record<string, unknown> {
    const c = parseCert(this.holder.current().certPem);
    if (c && c.notAfter <= Date.now()) {
      // Still served (it is what we were given), but clients will reject it: say so loudly.
      this.log.error({ certFile: this.o.certFile, serial: c.serial }, 'TLS certificate from files has expired');
    }
    return { certFile: this.o.certFile, serial: c?.serial, notAfter: c && new Date(c.notAfter).toISOString() };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.debounce);
    clearInterval(this.poll);
    for (const w of this.watchers) w.close();
    await this.reloading;
  }
}

/** Loads the files (rejecting if they are invalid) and keeps watching them. */
export async function fileTlsSource(o: FileTlsOptions): Promise<TlsSource> {
  const src = new FileSource(o, (o.logger ?? pino({ name: 'esi' })).child({ subsystem: 'certs-files' }));
  await src.start();
  return src;
}

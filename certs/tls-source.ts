// The contract between certificate providers (self-managed bootstrap, mounted files) and
// the webhook's HTTPS server. The server starts with current() and hot-swaps its secure
// context on every onChange, so certificates rotate without a restart.

/** PEM-encoded serving material. Never log these fields. */
export interface TlsMaterial {
  /** Serving certificate (leaf first; may be followed by intermediates). */
  certPem: string;
  /** Private key of the serving certificate. */
  keyPem: string;
  /** Bundle of trusted CAs (may hold several during a CA rotation). Empty if unknown. */
  caPem: string;
}

export interface TlsSource {
  /** The material to serve now. Throws if called before ready(). */
  current(): TlsMaterial;
  /** Called with the new material each time it changes (not for the initial load). */
  onChange(cb: (m: TlsMaterial) => void): void;
  /** True once material has been loaded. */
  ready(): boolean;
  /** Stops watching/rotating; the last material stays available. */
  stop(): Promise<void>;
}

function sameMaterial(a: TlsMaterial | undefined, b: TlsMaterial): boolean {
  return a !== undefined && a.certPem === b.certPem && a.keyPem === b.keyPem && a.caPem === b.caPem;
}

/**
 * Holds the current material and fans changes out to listeners. A listener that throws must
 * not stop the others (or the rotation loop), so errors are handed to onListenerError.
 */
export class MaterialHolder {
  private material: TlsMaterial | undefined;
  private readonly listeners: Array<(m: TlsMaterial) => void> = [];

  constructor(private readonly onListenerError: (err: unknown) => void) {}

  current(): TlsMaterial {
    if (!this.material) throw new Error('TLS material is not loaded yet');
    return this.material;
  }

  ready(): boolean {
    return this.material !== undefined;
  }

  onChange(cb: (m: TlsMaterial) => void): void {
    this.listeners.push(cb);
  }

  /** Stores m; notifies listeners only if it differs from what was there. Returns true if changed. */
  set(m: TlsMaterial): boolean {
    if (sameMaterial(this.material, m)) return false;
    const initial = this.material === undefined;
    this.material = m;
    if (initial) return true;
    for (const cb of this.listeners) {
      try {
        cb(m);
      } catch (err) {
        this.onListenerError(err);
      }
    }
    return true;
  }
}

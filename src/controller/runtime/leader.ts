// Leader election with a coordination.k8s.io/v1 Lease, one per controller class: only the
// holder reconciles. The algorithm is client-go's: a standby takes the Lease when it has
// not seen it change for `leaseDurationMs` (its own clock, so clock skew between nodes
// does not matter); the holder renews every `retryPeriodMs` and stops (the process exits)
// if it could not renew within `renewDeadlineMs`, which is shorter than the lease
// duration — so two holders never act at once. Stopping on SIGTERM releases the Lease so
// the standby takes over at once.
import type { Logger } from 'pino';
import { isKubeStatus, type KubeRest } from '../../kube/rest.js';
import { LEASES, resourcePath } from '../../kube/paths.js';

export interface LeaderOptions {
  rest: KubeRest;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  logger: Logger;
  onStarted(): void;
  /** The Lease was lost (renewal failed past the deadline): stop working now. */
  onLost(): void;
}

interface Lease {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

const microTime = (d = new Date()) => d.toISOString().replace(/(\.\d{3})Z$/, '$1000Z');

export class LeaderElector {
  private timer: NodeJS.Timeout | undefined;
  private leading = false;
  private stopped = false;
  private observed: { record: string; at: number } | undefined;
  private lastRenew = 0;
  /** The running acquire/renew round: stop() waits for it, so that a renewal in flight cannot
   *  overwrite the release (or make it fail with a conflict). */
  private inflight: Promise<void> | undefined;

  constructor(private readonly o: LeaderOptions) {}

  get isLeader(): boolean {
    return this.leading;
  }

  private get path(): string {
    return resourcePath(LEASES, { namespace: this.o.namespace });
  }

  private get leasePath(): string {
    return resourcePath(LEASES, { namespace: this.o.namespace, name: this.o.name });
  }

  start(): void {
    this.inflight = this.tick();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.tryAcquireOrRenew();
    } catch (err) {
      this.o.logger.warn({ err: (err as Error).message, lease: this.o.name }, 'lease update failed');
    }
    if (this.leading && Date.now() - this.lastRenew > this.o.renewDeadlineMs) {
      this.o.logger.error({ lease: this.o.name }, 'lease not renewed within the deadline; stopping');
      this.leading = false;
      this.o.onLost();
      return;
    }
    if (!this.stopped) this.timer = setTimeout(() => (this.inflight = this.tick()), this.o.retryPeriodMs);
  }

  private spec(prev?: Lease['spec']): Lease['spec'] {
    const now = microTime();
    const same = prev?.holderIdentity === this.o.identity;
    return {
      holderIdentity: this.o.identity,
      leaseDurationSeconds: Math.ceil(this.o.leaseDurationMs / 1000),
      acquireTime: same && prev?.acquireTime ? prev.acquireTime : now,
      renewTime: now,
      leaseTransitions: (prev?.leaseTransitions ?? 0) + (same || !prev ? 0 : 1),
    };
  }

  private async tryAcquireOrRenew(): Promise<void> {
    let lease: Lease | undefined;
    try {
      lease = await this.o.rest.get<Lease>(this.leasePath);
    } catch (err) {
      if (!isKubeStatus(err, 404)) throw err;
    }
    if (!lease) {
      await this.o.rest.create(this.path, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.o.name, namespace: this.o.namespace }, spec: this.spec() });
      return this.acquired();
    }
    const record = JSON.stringify(lease.spec);
    if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
    const holder = lease.spec.holderIdentity;
    const expired = Date.now() - this.observed.at > (lease.spec.leaseDurationSeconds ?? 0) * 1000;
    if (holder && holder !== this.o.identity && !expired) return;
    const body = { ...lease, spec: this.spec(lease.spec) };
    await this.o.rest.replace(this.leasePath, body);
    this.observed = { record: JSON.stringify(body.spec), at: Date.now() };
    if (holder !== this.o.identity) {
      this.o.logger.info({ lease: this.o.name, previous: holder || undefined }, 'lease acquired');
      return this.acquired();
    }
    this.lastRenew = Date.now();
  }

  private acquired(): void {
    this.lastRenew = Date.now();
    if (this.leading) return;
    this.leading = true;
    this.o.onStarted();
  }

  /** Stops electing; the holder releases the Lease (empty holder) for a fast hand-over. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inflight;
    if (!this.leading) return;
    this.leading = false;
    // A conflict means the Lease changed since it was read: read it again (still ours?) once.
    for (let attempt = 1; ; attempt++) {
      try {
        const lease = await this.o.rest.get<Lease>(this.leasePath);
        if (lease.spec.holderIdentity !== this.o.identity) return;
        await this.o.rest.replace(this.leasePath, {
          ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime() },
        });
        this.o.logger.info({ lease: this.o.name }, 'lease released');
        return;
      } catch (err) {
        if (attempt < 2 && isKubeStatus(err, 409)) continue;
        this.o.logger.warn({ err: (err as Error).message }, 'lease not released');
        return;
      }
    }
  }
}

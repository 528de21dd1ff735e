// Self-managed webhook certificates: every replica runs the same small loop (read the
// Secret, publish its CA bundle, decide, write with resourceVersion, reload). There is no
// leader: the apiserver's create/409 and resourceVersion checks pick one writer per change,
// and the others adopt the result on their next read.
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeRest } from '../src/kube/rest.js';
import type { Logger } from 'pino';
import { applyPlan, caBundle, decide, type CertState, type Lifetimes } from './plan.js';
import { keyMatchesCert, parseCert, servingIdentity, type ServingIdentity } from './pki.js';
import { CertSecretStore, type Stored } from './secret-store.js';
import { MaterialHolder, type TlsMaterial, type TlsSource } from './tls-source.js';
import { WebhookCaPublisher, type PublishResult } from './webhook-ca.js';

export interface SelfManagedTlsOptions {
  kc: KubeConfig;
  /** Namespace of the Secret and of the webhook Service. */
  namespace: string;
  secretName: string;
  serviceName: string;
  /** MutatingWebhookConfiguration whose webhooks get the caBundle. None: the CA bundle is
   *  read from the Secret by whoever verifies the server (the controller's metrics: a
   *  ServiceMonitor's tlsConfig). */
  webhookConfigName?: string;
  /** What the certificates serve, in log lines (default "webhook"). */
  purpose?: string;
  logger: Logger;
  /** CA lifetime. Default 10 years. */
  caValiditySeconds?: number;
  /** Serving certificate lifetime (capped at the CA's expiry). Default 90 days. */
  certValiditySeconds?: number;
  /** Renew a certificate once this fraction of its lifetime has passed. Default 2/3. */
  renewBeforeRatio?: number;
  /** How often each replica re-reads the Secret and re-checks. Default 10 s. */
  checkIntervalSeconds?: number;
  /** Wait after publishing a new CA before serving from it. Default 60 s (capped, see docs). */
  propagationDelaySeconds?: number;
  /** Extra SANs, e.g. localhost / 127.0.0.1 when the apiserver reaches the webhook by URL. */
  extraDNS?: string[];
  extraIPs?: string[];
  /** Clock (ms since epoch); injectable for tests. */
  now?: () => number;
}

export interface SelfManagedTlsSource extends TlsSource {
  /** Resolves with the first material; rejects if stopped before that. */
  whenReady(): Promise<TlsMaterial>;
  /** Runs one check now (also what the timer runs). */
  syncNow(): Promise<void>;
}

const DAY = 86_400;

interface Resolved {
  life: Lifetimes;
  ratio: number;
  intervalMs: number;
  propagationDelayMs: number;
  identity: ServingIdentity;
  now: () => number;
}

function resolveOptions(o: SelfManagedTlsOptions): Resolved {
  const caS = o.caValiditySeconds ?? 3650 * DAY;
  const certS = o.certValiditySeconds ?? 90 * DAY;
  const ratio = o.renewBeforeRatio ?? 2 / 3;
  const intervalS = o.checkIntervalSeconds ?? 10;
  if (!(caS > 0 && certS > 0 && intervalS > 0)) throw new Error('certificate lifetimes and check interval must be > 0');
  if (!(ratio > 0 && ratio < 1)) throw new Error('renewBeforeRatio must be between 0 and 1');
  // The serving cert must not expire while we wait for a new CA to propagate: keep the wait
  // well inside the time left after renewal starts.
  const maxDelayS = (certS * (1 - ratio)) / 2;
  return {
    life: { caLifetimeMs: caS * 1000, certLifetimeMs: certS * 1000 },
    ratio,
    intervalMs: intervalS * 1000,
    propagationDelayMs: Math.min(o.propagationDelaySeconds ?? 60, maxDelayS) * 1000,
    identity: servingIdentity(o.serviceName, o.namespace, o.extraDNS, o.extraIPs),
    now: o.now ?? Date.now,
  };
}

const EMPTY: CertState = { previousCas: [], bundleVersion: 0, caRotatedAt: 0 };

function materialOf(state: CertState): TlsMaterial | undefined {
  const s = state.serving;
  if (!s || !keyMatchesCert(s.certPem, s.keyPem)) return undefined;
  return { certPem: s.certPem, keyPem: s.keyPem, caPem: caBundle(state) };
}

/** Loggable facts about a state: serials and expiry only, never PEM. */
function describe(state: CertState): Record<string, unknown> {
  const ca = parseCert(state.ca?.certPem);
  const cert = parseCert(state.serving?.certPem);
  return {
    ca: ca && { subject: ca.subject, serial: ca.serial, notAfter: new Date(ca.notAfter).toISOString() },
    serving: cert && { serial: cert.serial, notAfter: new Date(cert.notAfter).toISOString() },
    previousCas: state.previousCas.length,
    bundleVersion: state.bundleVersion,
  };
}

class SelfManaged implements SelfManagedTlsSource {
  private readonly cfg: Resolved;
  private readonly log: Logger;
  private readonly rest: KubeRest;
  private readonly store: CertSecretStore;
  private readonly publisher: WebhookCaPublisher | undefined;
  private readonly purpose: string;
  private readonly holder: MaterialHolder;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private stopped = false;
  private failures = 0;
  private configMissingLogged = false;
  private readonly readyP: Promise<TlsMaterial>;
  private settleReady!: { resolve: (m: TlsMaterial) => void; reject: (e: Error) => void };

  constructor(private readonly opts: SelfManagedTlsOptions) {
    this.cfg = resolveOptions(opts);
    this.log = opts.logger.child({ subsystem: 'certs', secret: `${opts.namespace}/${opts.secretName}` });
    this.rest = new KubeRest(opts.kc);
    this.store = new CertSecretStore(this.rest, opts.namespace, opts.secretName);
    this.publisher = opts.webhookConfigName === undefined ? undefined : new WebhookCaPublisher(this.rest, opts.webhookConfigName);
    this.purpose = opts.purpose ?? 'webhook';
    this.holder = new MaterialHolder((err) => this.log.error({ err }, 'TLS change listener failed'));
    this.readyP = new Promise((resolve, reject) => { this.settleReady = { resolve, reject }; });
    this.readyP.catch(() => undefined); // a rejection nobody awaits must not crash the process
  }

  current(): TlsMaterial { return this.holder.current(); }
  ready(): boolean { return this.holder.ready(); }
  onChange(cb: (m: TlsMaterial) => void): void { this.holder.onChange(cb); }
  whenReady(): Promise<TlsMaterial> { return this.readyP; }

  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inFlight?.catch(() => undefined);
    this.rest.close();
    if (!this.ready()) this.settleReady.reject(new Error('TLS source stopped before certificates were loaded'));
  }

  /** One check; concurrent callers share the same run. */
  syncNow(): Promise<void> {
    this.inFlight ??= this.tick().finally(() => { this.inFlight = undefined; });
    return this.inFlight;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.runScheduled(), delayMs);
    // Until ready, a caller is awaiting us and the retry timer is all that keeps the
    // process alive; afterwards the loop must not hold an otherwise finished process open.
    if (this.ready()) this.timer.unref();
  }

  private async runScheduled(): Promise<void> {
    try {
      await this.syncNow();
      this.failures = 0;
    } catch (err) {
      this.failures++;
      this.log.warn({ err, failures: this.failures }, 'certificate check failed; will retry');
    }
    // Back off quickly-then-slowly while failing; ±10% jitter keeps replicas out of lockstep.
    const base = this.failures ? Math.min(this.cfg.intervalMs, 500 * 2 ** (this.failures - 1)) : this.cfg.intervalMs;
    this.schedule(base * (0.9 + Math.random() * 0.2));
  }

  private async tick(): Promise<void> {
    let cur = await this.loadOrCreate();
    const pub = await this.publish(cur.state);
    if (pub.outcome !== 'newer') cur = await this.rotateIfNeeded(cur, pub);
    this.adopt(cur.state);
  }

  private async publish(state: CertState): Promise<PublishResult> {
    // Nothing to publish to: no client of ours can be broken by a new CA before it is served.
    if (!this.publisher) return { outcome: 'missing', trusted: new Set(), webhooks: 0 };
    const pub = await this.publisher.publish(caBundle(state), state.bundleVersion);
    const where = { webhookConfig: this.opts.webhookConfigName };
    if (pub.outcome === 'missing') {
      // Warn once: the chart may create the configuration after the first replica starts.
      if (!this.configMissingLogged) this.log.warn(where, 'webhook configuration not found; will publish the CA bundle once it exists');
      this.configMissingLogged = true;
      return pub;
    }
    this.configMissingLogged = false;
    if (pub.outcome === 'updated') {
      this.log.info({ ...where, bundleVersion: state.bundleVersion }, 'published CA bundle');
    }
    return pub;
  }

  private async loadOrCreate(): Promise<Stored> {
    const existing = await this.store.read();
    if (existing) return existing;
    const fresh = await this.next(EMPTY, true);
    const created = await this.store.create(fresh);
    if (created) {
      this.log.info(describe(created.state), `created ${this.purpose} certificate Secret`);
      return created;
    }
    const winner = await this.store.read();
    if (!winner) throw new Error('certificate Secret was created by another replica but is gone again');
    this.log.info(describe(winner.state), 'another replica created the certificate Secret; adopted it');
    return winner;
  }

  /** The state after this replica's decision (unchanged if nothing is due). */
  private async next(state: CertState, published: boolean): Promise<CertState> {
    const nowMs = this.cfg.now();
    const plan = decide({
      state, nowMs, identity: this.cfg.identity, renewBeforeRatio: this.cfg.ratio,
      propagationDelayMs: this.cfg.propagationDelayMs, activeCaPublished: published,
    });
    if (plan.actions.length === 0) {
      if (plan.reasons.length) this.log.debug({ reasons: plan.reasons }, 'certificate rotation waiting');
      return state;
    }
    this.log.info({ actions: plan.actions, reasons: plan.reasons }, `rotating ${this.purpose} certificates`);
    return applyPlan(state, plan, this.cfg.identity, nowMs, this.cfg.life);
  }

  private async rotateIfNeeded(cur: Stored, pub: PublishResult): Promise<Stored> {
    const fp = parseCert(cur.state.ca?.certPem)?.x509.fingerprint256;
    // No configuration or no webhooks in it: no client can be broken by a new CA.
    const published = pub.webhooks === 0 || (fp !== undefined && pub.trusted.has(fp));
    const next = await this.next(cur.state, published);
    if (next === cur.state) return cur;
    const saved = await this.store.update(cur, next);
    if (!saved) {
      this.log.info('another replica updated the certificate Secret first; adopting its version');
      return (await this.store.read()) ?? cur;
    }
    this.log.info(describe(saved.state), `stored rotated ${this.purpose} certificates`);
    // Publish right away so a new CA reaches the apiserver before anyone serves from it.
    await this.publish(saved.state);
    return saved;
  }

  private adopt(state: CertState): void {
    const m = materialOf(state);
    if (!m) {
      this.log.error('certificate Secret holds no usable serving certificate; keeping the current one');
      return;
    }
    const first = !this.ready();
    if (this.holder.set(m)) {
      this.log.info(describe(state), first ? `loaded ${this.purpose} certificates` : `reloaded ${this.purpose} certificates`);
      if (first) this.settleReady.resolve(m);
    }
  }
}

/** Starts the loop and returns at once; ready() turns true after the first successful check. */
export function createSelfManagedTlsSource(opts: SelfManagedTlsOptions): SelfManagedTlsSource {
  const src = new SelfManaged(opts);
  src.start();
  return src;
}

/** Starts the loop and resolves once certificates are loaded (retrying failures meanwhile). */
export async function selfManagedTlsSource(opts: SelfManagedTlsOptions): Promise<SelfManagedTlsSource> {
  const src = createSelfManagedTlsSource(opts);
  await src.whenReady();
  return src;
}

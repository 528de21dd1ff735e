// Publishes the CA bundle as the caBundle of every webhook in the
// MutatingWebhookConfiguration. Read-modify-replace with the resourceVersion read, retried
// on conflict. A version annotation orders writers: a replica holding an older bundle (it
// read the Secret just before another replica rotated) never overwrites a newer one.
// Plain JSON through KubeRest, as certs/secret-store.ts.
import type { V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { resourcePath, type Resource } from '../src/kube/paths.js';
import type { KubeRest } from '../src/kube/rest.js';
import { parseCert, splitPemBundle } from './pki.js';
import { ANNOTATIONS, httpStatus } from './secret-store.js';

export type PublishOutcome =
  /** The configuration does not exist (yet): nothing to patch, nobody to break. */
  | 'missing'
  /** It already carried this bundle. */
  | 'unchanged'
  /** We wrote the bundle. */
  | 'updated'
  /** It carries a newer bundle than ours; our Secret view is stale. */
  | 'newer';

export interface PublishResult {
  outcome: PublishOutcome;
  /** Fingerprints (sha256) of the CAs that every webhook of the configuration trusts now. */
  trusted: Set<string>;
  /** Number of webhooks in the configuration (0 when missing). */
  webhooks: number;
}

const MAX_CONFLICT_RETRIES = 5;

const MUTATING_WEBHOOK_CONFIGURATIONS: Resource = {
  group: 'admissionregistration.k8s.io', version: 'v1', plural: 'mutatingwebhookconfigurations', namespaced: false,
};

/** sha256 fingerprints of the certificates in a PEM bundle. */
export function fingerprints(bundlePem: string): Set<string> {
  const out = new Set<string>();
  for (const pem of splitPemBundle(bundlePem)) {
    const fp = parseCert(pem)?.x509.fingerprint256;
    if (fp) out.add(fp);
  }
  return out;
}

/** CAs trusted by every webhook (intersection of their caBundles). */
function trustedByAll(cfg: V1MutatingWebhookConfiguration): Set<string> {
  const sets = (cfg.webhooks ?? []).map((w) =>
    fingerprints(Buffer.from(w.clientConfig?.caBundle ?? '', 'base64').toString('utf8')));
  const [first, ...rest] = sets;
  if (!first) return new Set();
  return new Set([...first].filter((fp) => rest.every((s) => s.has(fp))));
}

function publishedVersion(cfg: V1MutatingWebhookConfiguration): number {
  const v = Number(cfg.metadata?.annotations?.[ANNOTATIONS.bundleVersion]);
  return Number.isFinite(v) ? v : -1;
}

function isCurrent(cfg: V1MutatingWebhookConfiguration, b64: string, version: number): boolean {
  return publishedVersion(cfg) === version && (cfg.webhooks ?? []).every((w) => w.clientConfig?.caBundle === b64);
}

function withBundle(cfg: V1MutatingWebhookConfiguration, b64: string, version: number): V1MutatingWebhookConfiguration {
  const { managedFields: _drop, ...meta } = cfg.metadata ?? {};
  return {
    ...cfg,
    metadata: { ...meta, annotations: { ...meta.annotations, [ANNOTATIONS.bundleVersion]: String(version) } },
    webhooks: (cfg.webhooks ?? []).map((w) => ({ ...w, clientConfig: { ...w.clientConfig, caBundle: b64 } })),
  };
}

function result(outcome: PublishOutcome, cfg: V1MutatingWebhookConfiguration): PublishResult {
  return { outcome, trusted: trustedByAll(cfg), webhooks: cfg.webhooks?.length ?? 0 };
}

export class WebhookCaPublisher {
  constructor(
    private readonly rest: KubeRest,
    readonly configName: string,
  ) {}

  private get path(): string {
    return resourcePath(MUTATING_WEBHOOK_CONFIGURATIONS, { name: this.configName });
  }

  private async get(): Promise<V1MutatingWebhookConfiguration | undefined> {
    try {
      return await this.rest.get<V1MutatingWebhookConfiguration>(this.path);
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw err;
    }
  }

  /**
   * A higher version that also trusts our active CA is a later state of our own Secret (we
   * read it just before another replica rotated). A higher version that does not trust our
   * active CA came from a Secret that has since been deleted and recreated: overwrite it,
   * or the recreated CA would never be published.
   */
  private holdsNewer(cfg: V1MutatingWebhookConfiguration, bundlePem: string, version: number): boolean {
    const [active] = fingerprints(splitPemBundle(bundlePem)[0] ?? '');
    return publishedVersion(cfg) > version && active !== undefined && trustedByAll(cfg).has(active);
  }

  /** Makes every webhook's caBundle equal bundlePem unless a newer bundle is already there. */
  async publish(bundlePem: string, version: number): Promise<PublishResult> {
    const b64 = Buffer.from(bundlePem, 'utf8').toString('base64');
    for (let attempt = 0; ; attempt++) {
      const cfg = await this.get();
      if (!cfg) return { outcome: 'missing', trusted: new Set(), webhooks: 0 };
      if (this.holdsNewer(cfg, bundlePem, version)) return result('newer', cfg);
      if (isCurrent(cfg, b64, version)) return result('unchanged', cfg);
      try {
        const body = withBundle(cfg, b64, version);
        const saved = await this.rest.call<V1MutatingWebhookConfiguration>('PUT', this.path, body);
        return result('updated', saved);
      } catch (err) {
        if (httpStatus(err) !== 409 || attempt >= MAX_CONFLICT_RETRIES) throw err;
      }
    }
  }
}

// The one Secret that holds the webhook's CA and serving certificate. Writes are either a
// plain create (exactly one replica wins; the others get 409 and adopt the winner's) or an
// update carrying the resourceVersion that was read (a 409 means someone else rotated first).
// Plain JSON through KubeRest: the generated CoreV1Api would load every generated model class
// into the webhook (docs/decisions/0046-bundled-entry.md).
import type { V1Secret } from '@kubernetes/client-node';
import { resourcePath, SECRETS } from '../src/kube/paths.js';
import type { KubeRest } from '../src/kube/rest.js';
import { caBundle, otherCerts, type CertState } from './plan.js';

export const KEYS = {
  cert: 'tls.crt',
  key: 'tls.key',
  caCert: 'ca.crt',
  caKey: 'ca.key',
  bundle: 'ca-bundle.crt',
} as const;

export const ANNOTATIONS = {
  bundleVersion: 'esi.dev/ca-bundle-version',
  caRotatedAt: 'esi.dev/ca-rotated-at',
} as const;

export interface Stored {
  state: CertState;
  secret: V1Secret;
}

/** HTTP status of a KubeRest KubeError or a client-node ApiException (undefined for other errors). */
export function httpStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

function decode(data: Record<string, string> | undefined, key: string): string | undefined {
  const v = data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
}

function encode(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64');
}

function pair(certPem: string | undefined, keyPem: string | undefined): { certPem: string; keyPem: string } | undefined {
  return certPem && keyPem ? { certPem, keyPem } : undefined;
}

/** Decodes a Secret; missing or garbled fields come back empty and the planner repairs them. */
function stateFromSecret(secret: V1Secret): CertState {
  const d = secret.data;
  const ca = pair(decode(d, KEYS.caCert), decode(d, KEYS.caKey));
  const ann = secret.metadata?.annotations ?? {};
  const version = Number(ann[ANNOTATIONS.bundleVersion]);
  const rotatedAt = Date.parse(ann[ANNOTATIONS.caRotatedAt] ?? '');
  return {
    ca,
    previousCas: otherCerts(decode(d, KEYS.bundle) ?? '', ca?.certPem),
    serving: pair(decode(d, KEYS.cert), decode(d, KEYS.key)),
    bundleVersion: Number.isFinite(version) ? version : 0,
    caRotatedAt: Number.isFinite(rotatedAt) ? rotatedAt : 0,
  };
}

function dataFromState(state: CertState): Record<string, string> {
  return {
    [KEYS.cert]: encode(state.serving?.certPem ?? ''),
    [KEYS.key]: encode(state.serving?.keyPem ?? ''),
    [KEYS.caCert]: encode(state.ca?.certPem ?? ''),
    [KEYS.caKey]: encode(state.ca?.keyPem ?? ''),
    [KEYS.bundle]: encode(caBundle(state)),
  };
}

function annotationsFromState(state: CertState): Record<string, string> {
  return {
    [ANNOTATIONS.bundleVersion]: String(state.bundleVersion),
    [ANNOTATIONS.caRotatedAt]: new Date(state.caRotatedAt).toISOString(),
  };
}

export class CertSecretStore {
  constructor(
    private readonly rest: KubeRest,
    readonly namespace: string,
    readonly name: string,
  ) {}

  private path(name?: string): string {
    return resourcePath(SECRETS, { namespace: this.namespace, ...(name === undefined ? {} : { name }) });
  }

  /** The stored state, or undefined if the Secret does not exist. */
  async read(): Promise<Stored | undefined> {
    try {
      const secret = await this.rest.get<V1Secret>(this.path(this.name));
      return { state: stateFromSecret(secret), secret };
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw err;
    }
  }

  /** Creates the Secret; returns undefined if another replica created it first (409). */
  async create(state: CertState): Promise<Stored | undefined> {
    const body: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: {
        name: this.name,
        namespace: this.namespace,
        labels: { 'app.kubernetes.io/managed-by': 'esi', 'app.kubernetes.io/component': 'webhook-certificates' },
        annotations: annotationsFromState(state),
      },
      data: dataFromState(state),
    };
    try {
      const secret = await this.rest.call<V1Secret>('POST', this.path(), body);
      return { state: stateFromSecret(secret), secret };
    } catch (err) {
      if (httpStatus(err) === 409) return undefined;
      throw err;
    }
  }

  /**
   * Replaces the Secret we read (prev) with state. The body carries prev's resourceVersion,
   * so the apiserver refuses it (409 → undefined) if anyone wrote in between.
   */
  async update(prev: Stored, state: CertState): Promise<Stored | undefined> {
    const { managedFields: _drop, ...meta } = prev.secret.metadata ?? {};
    // Without a resourceVersion the apiserver would accept a blind overwrite.
    if (!meta.resourceVersion) throw new Error('refusing to update a Secret read without a resourceVersion');
    const body: V1Secret = {
      ...prev.secret,
      metadata: { ...meta, annotations: { ...meta.annotations, ...annotationsFromState(state) } },
      data: { ...prev.secret.data, ...dataFromState(state) },
    };
    try {
      const secret = await this.rest.call<V1Secret>('PUT', this.path(this.name), body);
      return { state: stateFromSecret(secret), secret };
    } catch (err) {
      if (httpStatus(err) === 409) return undefined;
      throw err;
    }
  }
}

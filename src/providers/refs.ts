// Building a provider's StoreReferences from its own spec fields: each provider's
// `references(spec)` names the fields that hold Secret/ConfigMap keys and ServiceAccounts
// (no generic guessing from the shape of an object).
import type { CredentialRef, ServiceAccountRef, StoreReferences } from './types.js';
import { isObject, type Json } from '../json-object.js';

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The object at `path` (dot-separated field names) of an unvalidated spec, if any. */
export function field(spec: unknown, path: string): Json | undefined {
  let node: unknown = spec;
  for (const part of path.split('.')) node = isObject(node) && Object.hasOwn(node, part) ? node[part] : undefined;
  return isObject(node) ? node : undefined;
}

export class References implements StoreReferences {
  readonly credentials: CredentialRef[] = [];
  readonly serviceAccounts: ServiceAccountRef[] = [];

  /** `provider` prefixes every path (`vault.auth.tokenSecretRef`); `spec` is read by path. */
  constructor(
    private readonly provider: string,
    private readonly spec: unknown,
  ) {}

  private at(path: string): { ref: Json; path: string; name: string; namespace?: string } | undefined {
    const ref = field(this.spec, path);
    const name = str(ref?.name);
    if (!ref || !name) return undefined;
    const namespace = str(ref.namespace);
    return { ref, path: `${this.provider}.${path}`, name, ...(namespace ? { namespace } : {}) };
  }

  /** A `{name, key, namespace?}` Secret key selector. */
  secretKey(...paths: string[]): this {
    for (const p of paths) {
      const r = this.at(p);
      const key = str(r?.ref.key);
      // Without a key it is not a usable selector (validateSpec says so): nothing to mount.
      if (r && key) this.credentials.push({ path: r.path, kind: 'Secret', name: r.name, key, ...(r.namespace ? { namespace: r.namespace } : {}) });
    }
    return this;
  }

  /** A `{name, key?, namespace?}` Secret key selector whose key defaults to `defaultKey`. */
  secretKeyOr(path: string, defaultKey: string): this {
    const r = this.at(path);
    if (r) this.credentials.push({ path: r.path, kind: 'Secret', name: r.name, key: str(r.ref.key) ?? defaultKey, ...(r.namespace ? { namespace: r.namespace } : {}) });
    return this;
  }

  /** A whole Secret (every key mounted). */
  secret(path: string): this {
    const r = this.at(path);
    if (r) this.credentials.push({ path: r.path, kind: 'Secret', name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}) });
    return this;
  }

  /** A `caProvider`: a Secret or ConfigMap key by its `type`. */
  caProvider(path: string): this {
    const r = this.at(path);
    if (r) {
      const kind = r.ref.type === 'ConfigMap' ? 'ConfigMap' : 'Secret';
      this.credentials.push({ path: r.path, kind, name: r.name, key: str(r.ref.key), ...(r.namespace ? { namespace: r.namespace } : {}) });
    }
    return this;
  }

  /** A ServiceAccount selector; `besideAt` names the object whose `audiences` apply when
   *  the selector has none (vault jwt.kubernetesServiceAccountToken). */
  serviceAccount(path: string, besideAt?: string): this {
    const r = this.at(path);
    if (!r) return this;
    const list = (v: unknown): string[] | undefined => (Array.isArray(v) ? (v as string[]) : undefined);
    const audiences = list(r.ref.audiences) ?? (besideAt ? list(field(this.spec, besideAt)?.audiences) : undefined);
    this.serviceAccounts.push({ path: r.path, name: r.name, ...(r.namespace ? { namespace: r.namespace } : {}), ...(audiences ? { audiences } : {}) });
    return this;
  }
}

/** A provider without credentials or identities. */
export const NO_REFERENCES = (): StoreReferences => ({ credentials: [], serviceAccounts: [] });

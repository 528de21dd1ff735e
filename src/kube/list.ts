// What the watch-backed caches of the webhook (webhook/cache.ts) and the reconciler
// (src/controller/runtime/informers.ts) do alike: list in pages, and drop from each object what no
// reader needs before the cache stores it (a second, serialised copy of each
// object otherwise: docs/performance/reconciler-at-scale.md, lever 5).
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeRest } from './rest.js';

/** Objects per page of an initial LIST: 10 000 ExternalSecrets never arrive as one response. */
const LIST_PAGE = 500;

/** kubectl's copy of the applied manifest: never the object's own metadata for a reader. */
export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

export interface TrimOptions {
  /** Drop `status` too (the webhook never reads it). */
  status?: boolean;
  /** Keep kubectl's last-applied-configuration (Secrets written back whole must keep it). */
  keepLastApplied?: boolean;
}

/** Drops, in place, managedFields, kubectl's last-applied copy of the object and, when asked,
 *  status: most of a cached object's size. Returns `obj`. */
export function trimObject<T extends KubernetesObject>(obj: T, o: TrimOptions = {}): T {
  if (o.status) delete (obj as { status?: unknown }).status;
  const meta = obj.metadata;
  if (!meta) return obj;
  delete meta.managedFields;
  if (!o.keepLastApplied && meta.annotations && LAST_APPLIED in meta.annotations) delete meta.annotations[LAST_APPLIED];
  return obj;
}

export interface ListPage {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: KubernetesObject[];
}

/** The LIST an informer starts from, in pages of LIST_PAGE, `each` applied to every item as
 *  its page arrives; the pages share one snapshot, whose resourceVersion the watch starts from. */
export async function pagedList(rest: KubeRest, path: string, each: (o: KubernetesObject) => KubernetesObject): Promise<ListPage> {
  const items: KubernetesObject[] = [];
  const sep = path.includes('?') ? '&' : '?';
  let page: ListPage;
  let token: string | undefined;
  do {
    const query = new URLSearchParams({ limit: String(LIST_PAGE), ...(token ? { continue: token } : {}) });
    page = await rest.get<ListPage>(`${path}${sep}${query}`);
    for (const o of page.items ?? []) items.push(each(o));
    token = page.metadata?.continue || undefined;
  } while (token);
  return { metadata: { resourceVersion: page.metadata?.resourceVersion }, items };
}

// Every REST path the product sends to the apiserver is built here, from a resource and
// validated names (src/kube/names.ts), each segment percent-encoded. Nothing else
// assembles `/api/...` or `/apis/...` strings: a name taken from a tenant's object and
// concatenated into a URL once let `..` climb out of the tenant's namespace (the URL parser
// resolves dot segments), so the lint rule in eslint.config.js refuses path literals outside
// this file. See SECURITY.md, "The controller".
import { API_GROUP, API_VERSION_V1, API_VERSION_V1ALPHA1, GENERATORS_GROUP, GENERATORS_VERSION } from '../api/types.js';
import { assertName } from './names.js';

/** A kind of object as the REST API addresses it. `group` '' is the core group (`/api/v1`). */
export interface Resource {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

const core = (plural: string, namespaced = true): Resource => ({ group: '', version: 'v1', plural, namespaced });
const esi = (plural: string, namespaced: boolean, version = API_VERSION_V1): Resource => ({ group: API_GROUP, version, plural, namespaced });

export const SECRETS = core('secrets');
export const PODS = core('pods');
export const CONFIG_MAPS = core('configmaps');
export const SERVICE_ACCOUNTS = core('serviceaccounts');
export const EVENTS = core('events');
export const NAMESPACES = core('namespaces', false);
export const LEASES: Resource = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespaced: true };
const apps = (plural: string): Resource => ({ group: 'apps', version: 'v1', plural, namespaced: true });
export const DEPLOYMENTS = apps('deployments');
export const STATEFUL_SETS = apps('statefulsets');
export const DAEMON_SETS = apps('daemonsets');
export const CUSTOM_RESOURCE_DEFINITIONS: Resource = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', namespaced: false };
export const SELF_SUBJECT_ACCESS_REVIEWS: Resource = { group: 'authorization.k8s.io', version: 'v1', plural: 'selfsubjectaccessreviews', namespaced: false };
export const SUBJECT_ACCESS_REVIEWS: Resource = { group: 'authorization.k8s.io', version: 'v1', plural: 'subjectaccessreviews', namespaced: false };
export const TOKEN_REVIEWS: Resource = { group: 'authentication.k8s.io', version: 'v1', plural: 'tokenreviews', namespaced: false };
export const EXTERNAL_SECRETS = esi('externalsecrets', true);
export const SECRET_STORES = esi('secretstores', true);
export const CLUSTER_SECRET_STORES = esi('clustersecretstores', false);
export const CLUSTER_EXTERNAL_SECRETS = esi('clusterexternalsecrets', false);
export const PUSH_SECRETS = esi('pushsecrets', true, API_VERSION_V1ALPHA1);
export const CLUSTER_PUSH_SECRETS = esi('clusterpushsecrets', false, API_VERSION_V1ALPHA1);
/** What the reconciler keeps of a generator's output to clean it up later (docs/generators.md). */
export const GENERATOR_STATES: Resource = { group: GENERATORS_GROUP, version: GENERATORS_VERSION, plural: 'generatorstates', namespaced: true };

/** The resource of `apiVersion` ("group/version" or "v1") and `plural`. */
export function resourceOf(apiVersion: string, plural: string, namespaced: boolean): Resource {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion, plural, namespaced }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1), plural, namespaced };
}

export interface PathOptions {
  /** The object's namespace; omitted for a namespaced resource, the path lists all namespaces. */
  namespace?: string;
  /** The object's name; omitted for the collection. */
  name?: string;
  /** A subresource of the named object. */
  subresource?: 'status' | 'token' | 'finalize';
  /** Query parameters; undefined values are left out. */
  query?: Record<string, string | number | boolean | undefined>;
}

/** The REST path of `r`'s collection or one of its objects. Throws InvalidNameError when the
 *  namespace is not an RFC 1123 label or the name not an RFC 1123 subdomain. */
export function resourcePath(r: Resource, o: PathOptions = {}): string {
  const parts = r.group ? ['apis', r.group, r.version] : ['api', r.version];
  if (o.namespace !== undefined) {
    if (!r.namespaced) throw new Error(`${r.plural} are cluster-scoped: no namespace in their path`);
    parts.push('namespaces', assertName('namespace', o.namespace, 'label'));
  }
  parts.push(r.plural);
  if (o.name !== undefined) parts.push(assertName('name', o.name, 'subdomain'));
  else if (o.subresource) throw new Error(`subresource ${o.subresource} needs an object name`);
  if (o.subresource) parts.push(o.subresource);
  let path = `/${parts.map(encodeURIComponent).join('/')}`;
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(o.query ?? {})) if (v !== undefined) query.set(k, String(v));
  if (query.size) path += `?${query.toString()}`;
  return path;
}

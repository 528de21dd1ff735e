// The reconciler's side of `target.template` beyond rendering: spec checks that need no
// I/O (forbidden Secret types, templateFrom references) and the reads of templateFrom
// configMap/secret sources from the ExternalSecret's own namespace (rules and bounds:
// src/externalsecret/template-sources.ts). Sources are read at every fetch, not watched:
// a changed ConfigMap is used at the next refresh at the latest (docs/controller.md).
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { ExternalSecret } from '../api/types.js';
import { loadTemplateSources, templateSourceRefs, TemplateSourceError } from '../externalsecret/template-sources.js';
import { isKubeStatus, type KubeRest } from '../kube/rest.js';
import type { TemplateSources } from '../templating/index.js';

/** Secret types the apiserver fills with credentials (a ServiceAccount token, a bootstrap
 *  token): writing one would hand whoever may create an ExternalSecret a credential. */
const FORBIDDEN_TYPES = ['kubernetes.io/service-account-token', 'bootstrap.kubernetes.io/token'];

/** Problems of `es`'s template spec (value-free); throws TemplateSourceError
 *  (AccessDenied) for a source in another namespace. */
export function templateSpecProblems(es: ExternalSecret): string[] {
  const problems: string[] = [];
  const type = es.spec.target?.template?.type;
  if (type && FORBIDDEN_TYPES.includes(type)) problems.push(`spec.target.template.type "${type}" is not allowed: the apiserver would put a credential into it; use another type`);
  try {
    templateSourceRefs(es.spec.target?.template, es.metadata.namespace!);
  } catch (err) {
    if (!(err instanceof TemplateSourceError) || err.reason === 'AccessDenied') throw err;
    problems.push(err.message);
  }
  return problems;
}

/** Reads `es`'s templateFrom configMap/secret sources; throws TemplateSourceError, or the
 *  apiserver's error for a failed read (not a 404). */
export async function readTemplateSources(rest: KubeRest, es: ExternalSecret): Promise<TemplateSources> {
  const ns = es.metadata.namespace!;
  const refs = templateSourceRefs(es.spec.target?.template, ns);
  if (!refs.length) return { configMap: {}, secret: {} };
  const get = async <T>(path: string): Promise<T | undefined> => {
    try {
      return await rest.get<T>(path);
    } catch (err) {
      if (isKubeStatus(err, 404)) return undefined;
      throw err;
    }
  };
  return loadTemplateSources(refs, ns, async (kind, namespace, name) => {
    if (kind === 'configMap') {
      const cm = await get<V1ConfigMap>(`/api/v1/namespaces/${namespace}/configmaps/${name}`);
      return cm && (cm.data ?? {});
    }
    const s = await get<V1Secret>(`/api/v1/namespaces/${namespace}/secrets/${name}`);
    return s && Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
  });
}

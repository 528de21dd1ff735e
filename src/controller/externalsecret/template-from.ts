// The reconciler's side of `target.template` beyond rendering: checks of templateFrom
// references (no I/O) and the reads of templateFrom
// configMap/secret sources from the ExternalSecret's own namespace (rules and bounds:
// src/externalsecret/template-sources.ts). Sources are read at every fetch, not watched:
// a changed ConfigMap is used at the next refresh at the latest (docs/controller.md).
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { ExternalSecret } from '../../api/types.js';
import { loadTemplateSources, templateSourceRefs, TemplateSourceError } from '../../externalsecret/template-sources.js';
import type { KubeRest } from '../../kube/rest.js';
import type { TemplateSources } from '../../templating/index.js';
import { CONFIG_MAPS, resourcePath, SECRETS } from '../../kube/paths.js';

/** Problems of `es`'s templateFrom references (value-free); throws TemplateSourceError
 *  (AccessDenied) for a source in another namespace. The other template rules are
 *  src/externalsecret/checks.ts's (shared with the webhook). */
export function templateSpecProblems(es: ExternalSecret): string[] {
  const problems: string[] = [];
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
  return loadTemplateSources(refs, ns, async (kind, namespace, name) => {
    if (kind === 'configMap') {
      const cm = await rest.find<V1ConfigMap>(resourcePath(CONFIG_MAPS, { namespace, name }));
      return cm && (cm.data ?? {});
    }
    const s = await rest.find<V1Secret>(resourcePath(SECRETS, { namespace, name }));
    return s && Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
  });
}

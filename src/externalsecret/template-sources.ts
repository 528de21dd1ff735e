// `target.template.templateFrom[].configMap` / `.secret`: the ConfigMaps and Secrets whose
// keys are templates. Only the reconciler serves them (the agent reads no ConfigMap or
// Secret: admission refuses them, src/externalsecret/checks.ts). Access rule: the object is read
// from the ExternalSecret's own namespace, never another one (the API has no namespace
// field; one set anyway is refused, naming the field). Bounded: at most
// MAX_TEMPLATE_SOURCES objects per ExternalSecret, and only the listed keys are kept,
// each at most MAX_GO_TEMPLATE_BYTES (the templating limit of one template). The caller
// reads them at every fetch, so a changed ConfigMap is used at the next refresh at the latest.
import type { ExternalSecretTemplate } from '../api/types.js';
import { MAX_GO_TEMPLATE_BYTES } from '../templating/go/index.js';
import type { TemplateSources } from '../templating/eso.js';
import { nameProblem } from '../kube/names.js';

export const MAX_TEMPLATE_SOURCES = 16;

export type SourceKind = 'configMap' | 'secret';

export interface TemplateSourceRef {
  kind: SourceKind;
  name: string;
  /** The field naming it, for messages: `spec.target.template.templateFrom[0].configMap`. */
  field: string;
  keys: string[];
}

/** A problem with the references themselves (before any read): value-free, names the field. */
export class TemplateSourceError extends Error {
  constructor(message: string, readonly reason: 'InvalidSpec' | 'AccessDenied' | 'TemplateSourceNotFound') {
    super(message);
    this.name = 'TemplateSourceError';
  }
}

/** The configMap/secret references of `template`; throws TemplateSourceError on a
 *  reference that is malformed, points at another namespace, or exceeds the bounds. */
export function templateSourceRefs(template: ExternalSecretTemplate | undefined, namespace: string): TemplateSourceRef[] {
  const refs: TemplateSourceRef[] = [];
  (template?.templateFrom ?? []).forEach((tf, i) => {
    for (const kind of ['configMap', 'secret'] as const) {
      const ref = tf[kind];
      if (!ref) continue;
      const field = `spec.target.template.templateFrom[${i}].${kind}`;
      const ns = (ref as { namespace?: string }).namespace;
      if (ns !== undefined && ns !== namespace) {
        throw new TemplateSourceError(`${field}.namespace "${ns}": template sources are read only from the ExternalSecret's own namespace "${namespace}"; remove the field and copy the ${kind === 'configMap' ? 'ConfigMap' : 'Secret'} there`, 'AccessDenied');
      }
      if (!ref.name) throw new TemplateSourceError(`${field}.name must not be empty`, 'InvalidSpec');
      const bad = nameProblem(ref.name, 'subdomain');
      if (bad) throw new TemplateSourceError(`${field}.name ${bad}`, 'InvalidSpec');
      if (!ref.items?.length) throw new TemplateSourceError(`${field}.items must list the keys to render ([{key, templateAs}])`, 'InvalidSpec');
      refs.push({ kind, name: ref.name, field, keys: ref.items.map((it) => it.key) });
    }
    if (tf.valuesDecodingStrategy && tf.valuesDecodingStrategy !== 'None') {
      throw new TemplateSourceError(`spec.target.template.templateFrom[${i}].valuesDecodingStrategy ${tf.valuesDecodingStrategy} is not supported by ESI; remove it (None)`, 'InvalidSpec');
    }
  });
  const distinct = new Set(refs.map((r) => `${r.kind}/${r.name}`));
  if (distinct.size > MAX_TEMPLATE_SOURCES) {
    throw new TemplateSourceError(`spec.target.template.templateFrom references ${distinct.size} ConfigMaps/Secrets; ESI allows at most ${MAX_TEMPLATE_SOURCES}`, 'InvalidSpec');
  }
  return refs;
}

/** Reads one object's data as text (Secret values decoded); undefined when it does not exist. */
export type SourceReader = (kind: SourceKind, namespace: string, name: string) => Promise<Record<string, string> | undefined>;

/** Reads every referenced object from `namespace` (once each) and keeps the listed keys. */
export async function loadTemplateSources(refs: TemplateSourceRef[], namespace: string, read: SourceReader): Promise<TemplateSources> {
  const sources: TemplateSources = { configMap: {}, secret: {} };
  const objects = new Map<string, Record<string, string> | undefined>();
  for (const ref of refs) {
    const id = `${ref.kind}/${ref.name}`;
    if (!objects.has(id)) objects.set(id, await read(ref.kind, namespace, ref.name));
    const obj = objects.get(id);
    const what = `${ref.kind === 'configMap' ? 'ConfigMap' : 'Secret'} "${namespace}/${ref.name}" (${ref.field}.name)`;
    if (!obj) throw new TemplateSourceError(`${what} not found; create it in the ExternalSecret's namespace`, 'TemplateSourceNotFound');
    const kept = (sources[ref.kind][ref.name] ??= Object.create(null) as Record<string, string>);
    for (const key of ref.keys) {
      const text = obj[key];
      if (text === undefined) throw new TemplateSourceError(`${what} has no key "${key}" (${ref.field}.items)`, 'TemplateSourceNotFound');
      if (Buffer.byteLength(text) > MAX_GO_TEMPLATE_BYTES) {
        throw new TemplateSourceError(`${what} key "${key}" is larger than ${MAX_GO_TEMPLATE_BYTES} bytes, the limit of one template`, 'InvalidSpec');
      }
      kept[key] = text;
    }
  }
  return sources;
}

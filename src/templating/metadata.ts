// Labels and annotations a template renders onto the target Secret (the reconciler's
// `target.template.metadata` and `templateFrom[].target: Labels|Annotations`). Checked here,
// before the apiserver sees them: its own rejection quotes the offending value, and a
// rendered value may be a secret. Messages name the template, never the value; a key that
// came out of a template is not quoted either (it may hold a value).
import { TemplateError } from './errors.js';
import { isDnsSubdomain } from '../kube/names.js';

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Kubernetes' qualified name (label and annotation keys): `[prefix/]name`. */
function validKey(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && !isDnsSubdomain(prefix)) return false;
  return name.length > 0 && name.length <= 63 && NAME.test(name);
}

export type MetadataTarget = 'Labels' | 'Annotations';

/** Sets `key` in `out`; throws a value-free TemplateError when Kubernetes would refuse it. */
export function setMetadata(out: Record<string, string>, at: { name: string; target: MetadataTarget; renderedKey: boolean }, key: string, value: string): void {
  const what = at.target === 'Labels' ? 'label' : 'annotation';
  const which = at.renderedKey ? `a rendered ${what} key` : `${what} key "${key}"`;
  if (!validKey(key)) throw new TemplateError(at.name, `${which} is not a valid Kubernetes ${what} key ([prefix/]name, name at most 63 characters of [-A-Za-z0-9_.])`);
  if (at.target === 'Labels' && (value.length > 63 || !LABEL_VALUE.test(value))) {
    throw new TemplateError(at.name, `the rendered value of ${which} is not a valid label value (at most 63 characters of [-A-Za-z0-9_.], starting and ending alphanumeric)`);
  }
  out[key] = value;
}

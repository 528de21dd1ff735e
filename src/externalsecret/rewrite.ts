// `dataFrom[].rewrite`: Go regexp rewrites and Go template transforms of the keys a
// dataFrom entry produced.
import type { ExternalSecretRewrite } from '../api/types.js';
import { RemoteRefError } from '../providers/errors.js';
import { compileGoRegexp, expandGo, type GoRegexp } from '../providers/regexp.js';
import { emptySecretMap, type SecretMap } from '../providers/types.js';
import { rewriteMerge } from './rewrite-merge.js';

/** Go's Regexp.Expand (one implementation: src/providers/regexp.ts). */
export const expandGoTemplate = expandGo;

function rewriteKey(re: GoRegexp, target: string, key: string): string {
  return re.replaceAll(key, (groups, named) => expandGoTemplate(target, groups, named));
}

/** Renders a `rewrite[].transform` template (ESO's Go template engine) over the keys of
 *  `map`; supplied by the caller (the agent and the reconciler own the template engine).
 *  The agent renders in place; the reconciler in its render pool (src/templating/pool/). */
export type KeyTransform = (name: string, template: string, map: SecretMap) => SecretMap | Promise<SecretMap>;

/** `dataFrom[].rewrite`: each step rewrites every key, in order. */
export async function applyRewrites(rewrites: ExternalSecretRewrite[], map: SecretMap, transform?: KeyTransform): Promise<SecretMap> {
  let cur = map;
  for (const [i, rw] of rewrites.entries()) {
    if (rw.transform) {
      // A Go template (ESO engine v2) rendering each key, bound to `.value`.
      if (!transform) throw new RemoteRefError(`rewrite[${i}].transform needs a Go template engine, which this caller did not provide`, 'Unsupported');
      cur = await transform(`rewrite[${i}].transform`, rw.transform.template, cur);
      continue;
    }
    if (rw.merge) {
      cur = rewriteMerge(rw.merge, cur, `rewrite[${i}].merge`);
      continue;
    }
    if (!rw.regexp) throw new RemoteRefError(`rewrite[${i}] has no regexp`, 'InvalidSpec');
    const re = compileGoRegexp(rw.regexp.source);
    const next = emptySecretMap();
    for (const [k, v] of Object.entries(cur)) next[rewriteKey(re, rw.regexp.target, k)] = v;
    cur = next;
  }
  return cur;
}

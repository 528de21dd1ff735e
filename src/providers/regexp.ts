// Go (RE2) regular expressions as ESO's API carries them (`find.name.regexp`,
// `rewrite.regexp.source`), compiled for JavaScript. Shared by the providers (find by
// name) and the ExternalSecret layer (rewrites).
import { RemoteRefError } from './errors.js';
import { ProviderError } from './types.js';

/** Compiles an RE2 (Go) pattern for JavaScript: `(?P<name>` is Go's named group. */
export function compileGoRegexp(source: string): RegExp {
  try {
    return new RegExp(source.replace(/\(\?P</g, '(?<'), 'gu');
  } catch (err) {
    throw new RemoteRefError(`invalid rewrite regexp "${source}": ${(err as Error).message}`, 'InvalidSpec');
  }
}

/** `find.name.regexp` as a test of remote names (unanchored, as Go's MatchString); every
 *  name passes when the find names none. A bad pattern is InvalidSpec naming the field. */
export function findNameTest(find: { name?: { regexp: string } }, storeId: string): (name: string) => boolean {
  if (!find.name) return () => true;
  let re: RegExp;
  try {
    re = compileGoRegexp(find.name.regexp);
  } catch {
    throw new ProviderError('InvalidSpec', storeId, `invalid find.name.regexp "${find.name.regexp}"`);
  }
  return (name) => {
    re.lastIndex = 0;
    return re.test(name);
  };
}

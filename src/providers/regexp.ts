// Go (RE2) regular expressions as ESO's API carries them (`find.name.regexp`,
// `rewrite.regexp.source`), compiled for JavaScript. Shared by the providers (find by
// name) and the ExternalSecret layer (rewrites).
import { RemoteRefError } from './errors.js';

/** Compiles an RE2 (Go) pattern for JavaScript: `(?P<name>` is Go's named group. */
export function compileGoRegexp(source: string): RegExp {
  try {
    return new RegExp(source.replace(/\(\?P</g, '(?<'), 'gu');
  } catch (err) {
    throw new RemoteRefError(`invalid rewrite regexp "${source}": ${(err as Error).message}`, 'InvalidSpec');
  }
}

// ESO's key rules for the keys an ExternalSecret produces: `conversionStrategy` and
// what a valid Secret data key (and so an agent file name) is.
// Key conversion lives with the providers, which apply it too (src/providers/key-conversion.ts).

/** A valid Secret data key (and therefore a valid file name for the agent). */
export function isValidSecretKey(key: string): boolean {
  return key.length > 0 && key.length <= 253 && /^[-._a-zA-Z0-9]+$/.test(key) && key !== '.' && key !== '..';
}

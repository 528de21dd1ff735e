// A toy provider, written the way a new provider is added: this folder (meta.ts with
// what admission needs, index.ts with the client) plus one registry line. Its store
// spec: `toy: { greeting: string, tokenRef?: {name, key} }`; it serves `<greeting>, <key>`
// and, when `tokenRef` is set, proves the credential was mounted by reading it.
import { References } from '../../../src/providers/refs.js';
import type { ProviderMeta } from '../../../src/providers/types.js';

export interface ToySpec {
  greeting: string;
  tokenRef?: { name: string; key: string };
  /** Uses the pod's identity with this audience. */
  audience?: string;
}

export const meta: ProviderMeta = {
  name: 'toy',
  capabilities: { read: true, write: false, find: { name: false, tags: false, path: false }, versions: false, pushProperty: 'key', ownershipMark: false },
  validateSpec(spec) {
    const s = spec as Partial<ToySpec> | null;
    return typeof s?.greeting === 'string' && s.greeting !== '' ? [] : ['toy.greeting must be a non-empty string'];
  },
  references: (spec) => new References('toy', spec).secretKey('tokenRef'),
  identity: {
    ambient: (spec) => typeof (spec as Partial<ToySpec> | null)?.audience === 'string',
    audience: (spec) => (spec as Partial<ToySpec>).audience,
  },
};

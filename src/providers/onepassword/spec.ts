// Static checks of `spec.provider.onepassword` (ESO's 1Password Connect store). No I/O.
import { fieldProblems, fieldReferences, type FieldRule } from '../fields.js';
import type { StoreReferences } from '../types.js';
import { isObject } from '../../json-object.js';

export const FIELDS: readonly FieldRule[] = [
  { path: 'connectHost', kind: 'url', required: 'always', example: 'https://connect.example.com:8080 (the 1Password Connect server)' },
  { path: 'auth.secretRef.connectTokenSecretRef', kind: 'secretKey', required: 'always' },
];

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['onepassword must be an object'];
  const out = fieldProblems('onepassword', FIELDS, spec);
  const vaults = spec.vaults;
  if (!isObject(vaults) || Object.keys(vaults).length === 0) {
    out.push('onepassword.vaults must map at least one vault name to its order');
  } else {
    const orders = Object.values(vaults);
    if (orders.some((o) => !Number.isInteger(o))) out.push('onepassword.vaults orders must be integers');
    else if (new Set(orders).size !== orders.length) out.push('onepassword.vaults order numbers must be unique');
  }
  return out;
}

export function references(spec: unknown): StoreReferences {
  return fieldReferences('onepassword', FIELDS, spec);
}

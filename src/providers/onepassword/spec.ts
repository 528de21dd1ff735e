// Static checks of `spec.provider.onepassword` (ESO's 1Password Connect store). No I/O.
import { References } from '../refs.js';
import type { StoreReferences } from '../types.js';
import { isObject } from '../../json-object.js';


export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['onepassword must be an object'];
  const out: string[] = [];
  if (typeof spec.connectHost !== 'string' || spec.connectHost === '') {
    out.push('onepassword.connectHost must be the URL of the 1Password Connect server');
  } else {
    try {
      const u = new URL(spec.connectHost);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') out.push('onepassword.connectHost must be an http:// or https:// URL');
    } catch {
      out.push('onepassword.connectHost is not a valid URL');
    }
  }
  const vaults = spec.vaults;
  if (!isObject(vaults) || Object.keys(vaults).length === 0) {
    out.push('onepassword.vaults must map at least one vault name to its order');
  } else {
    const orders = Object.values(vaults);
    if (orders.some((o) => !Number.isInteger(o))) out.push('onepassword.vaults orders must be integers');
    else if (new Set(orders).size !== orders.length) out.push('onepassword.vaults order numbers must be unique');
  }
  const ref = isObject(spec.auth) && isObject(spec.auth.secretRef) ? spec.auth.secretRef.connectTokenSecretRef : undefined;
  if (!isObject(ref) || typeof ref.name !== 'string' || ref.name === '' || typeof ref.key !== 'string' || ref.key === '') {
    out.push('onepassword.auth.secretRef.connectTokenSecretRef needs name and key');
  }
  return out;
}

export function references(spec: unknown): StoreReferences {
  return new References('onepassword', spec).secretKey('auth.secretRef.connectTokenSecretRef');
}

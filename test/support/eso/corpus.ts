// A corpus of ESO-style documents generated from ESO's published schemas: every property
// of every served external-secrets.io kind is set in at least one document, and every
// provider of SecretStore / ClusterSecretStore has its own documents. Values satisfy ESO's
// own constraints (enums, patterns, bounds, CEL rules), so ESO's CRDs accept them: each
// document is one a user could have written for ESO.
import { loadEsoCrds, servedVersions, type RawCrd, type Schema } from './schema.js';

/** How many variants of a document: enough to take every combination of branches of ESO's
 *  "exactly one of" rules (the widest has three members) along a path: the rule at
 *  nesting depth d takes digit d of the variant in base 3. At least two (booleans). */
export function variantsFor(s: Schema): number {
  const depth = (n: Schema): number => {
    const own = (n['x-kubernetes-validations'] ?? []).some((v) => exclusiveFields(v.rule)?.length) ? 1 : 0;
    const kids = [...Object.values(n.properties ?? {}), ...(n.items ? [n.items] : []), ...(typeof n.additionalProperties === 'object' ? [n.additionalProperties] : [])];
    return own + Math.max(0, ...kids.map(depth));
  };
  return Math.max(2, 3 ** depth(s));
}

const PATTERN_VALUES: Record<string, string> = {
  '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$': 'corpus.name-1',
  '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$': 'corpus-1',
  '^[-._a-zA-Z0-9]+$': 'corpus_key-1',
  '^[a-z0-9-]+$': 'corpus-2',
  '^.*@.*\\.iam\\.gserviceaccount\\.com$': 'corpus@project.iam.gserviceaccount.com',
  '^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|@every [^\\s]+.*|[^\\s]+( [^\\s]+){4})$': '0 2 * * *',
};

/** Fields named in an ESO CEL rule that allows at most / exactly one of them
 *  (`a != b`, `(a && !b) || (!a && b)`, `[...].filter(...).size() <= 1`, and
 *  "remoteKey or rewrite"); rules that only need one of several are met by setting all. */
export function exclusiveFields(rule: string): string[] | undefined {
  const names = [...rule.matchAll(/has\(self\.(\w+)\)/g)].map((m) => m[1]!);
  const exclusive = /!=|&& !has|filter\(|^!has\(self\.remoteKey\)/.test(rule);
  return exclusive ? [...new Set(names)] : undefined;
}

function stringValue(s: Schema, path: string, variant: number): string {
  if (s.enum) return String(s.enum[variant % s.enum.length]);
  if (s.pattern !== undefined) {
    const v = PATTERN_VALUES[s.pattern];
    if (v === undefined) throw new Error(`${path}: no corpus value for pattern ${s.pattern}`);
    return v;
  }
  if (s.format === 'byte') return Buffer.from(`corpus ${path}`).toString('base64');
  if (s.format === 'date-time') return '2026-01-02T03:04:05Z';
  const base = `corpus-${variant}`;
  return s.maxLength !== undefined && s.maxLength < base.length ? base.slice(0, s.maxLength) : base;
}

function objectValue(s: Schema, path: string, variant: number, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const drop = new Set<string>();
  let below = depth;
  for (const v of s['x-kubernetes-validations'] ?? []) {
    const names = exclusiveFields(v.rule);
    if (!names?.length) continue;
    const pick = Math.floor(variant / 3 ** depth) % names.length;
    names.forEach((n, i) => i !== pick && drop.add(n));
    below = depth + 1;
  }
  for (const [name, child] of Object.entries(s.properties ?? {})) {
    if (!drop.has(name)) out[name] = generate(child, `${path}.${name}`, variant, below);
  }
  if (typeof s.additionalProperties === 'object') out.corpusKey = generate(s.additionalProperties, `${path}{}`, variant, below);
  return out;
}

/** A value for `s` that ESO's schema accepts; `variant` picks enum values and the branch of
 *  each exclusive rule. */
export function generate(s: Schema, path: string, variant: number, depth = 0): unknown {
  if (s['x-kubernetes-int-or-string']) return variant % 2 === 0 ? '5m' : 300;
  if (s['x-kubernetes-preserve-unknown-fields'] && !s.properties && s.type !== 'array') {
    return { corpusField: `free-${variant}`, nested: { list: [1, 'two'], flag: true } };
  }
  switch (s.type) {
    case 'string':
      return stringValue(s, path, variant);
    case 'integer': {
      const lo = s.minimum ?? 1;
      return Math.min(s.maximum ?? lo + 600, lo + 600);
    }
    case 'number':
      return 1.5;
    case 'boolean':
      return variant % 2 === 0;
    case 'array':
      return s.items ? [generate(s.items, `${path}[]`, variant, depth)] : [];
    case 'object':
    case undefined:
      return objectValue(s, path, variant, depth);
    default:
      throw new Error(`${path}: no corpus value for type ${s.type}`);
  }
}

export interface CorpusDocument {
  apiVersion: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  label: string;
  spec: Record<string, unknown>;
}

function docsFor(crd: RawCrd, version: string, spec: Schema): CorpusDocument[] {
  const base = { apiVersion: `${crd.spec.group}/${version}`, kind: crd.spec.names.kind, plural: crd.spec.names.plural, namespaced: crd.spec.scope === 'Namespaced' };
  const provider = spec.properties?.provider;
  const out: CorpusDocument[] = [];
  if (provider?.properties) {
    // One provider per document, as a user writes stores; every provider is covered.
    const rest = { ...spec, properties: { ...spec.properties } };
    delete rest.properties.provider;
    for (const [name, p] of Object.entries(provider.properties)) {
      for (let variant = 0; variant < variantsFor(p); variant++) {
        const common = generate(rest, 'spec', variant) as Record<string, unknown>;
        out.push({ ...base, label: `${base.kind}/${version} provider ${name} #${variant}`, spec: { ...common, provider: { [name]: generate(p, `spec.provider.${name}`, variant) } } });
      }
    }
  } else {
    for (let variant = 0; variant < variantsFor(spec); variant++) {
      out.push({ ...base, label: `${base.kind}/${version} #${variant}`, spec: generate(spec, 'spec', variant) as Record<string, unknown> });
    }
  }
  return out;
}

/** Every document of the corpus. */
export function esoCorpus(): CorpusDocument[] {
  const out: CorpusDocument[] = [];
  for (const crd of loadEsoCrds()) {
    for (const v of servedVersions(crd)) {
      const spec = v.schema.openAPIV3Schema.properties?.spec;
      if (spec) out.push(...docsFor(crd, v.name, spec));
    }
  }
  return out;
}

/** Every property path of `value` (for the coverage check). */
export function valuePaths(value: unknown, path: string, out: Set<string>): Set<string> {
  if (Array.isArray(value)) value.forEach((v) => valuePaths(v, `${path}[]`, out));
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const p = `${path}.${k}`;
      out.add(p);
      valuePaths(v, p, out);
    }
  }
  return out;
}

/** Every property path ESO's schema defines below `spec` (free-form nodes end a path). */
export function schemaPaths(s: Schema, path: string, out: Set<string>): Set<string> {
  for (const [k, v] of Object.entries(s.properties ?? {})) {
    const p = `${path}.${k}`;
    out.add(p);
    schemaPaths(v, p, out);
  }
  if (s.items) schemaPaths(s.items, `${path}[]`, out);
  if (typeof s.additionalProperties === 'object') schemaPaths(s.additionalProperties, `${path}.corpusKey`, out);
  return out;
}

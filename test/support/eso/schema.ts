// ESO's published external-secrets.io CRDs as test data, and the structural comparison
// that says whether ESI's schema accepts everything ESO's accepts. The bundle is read
// from the shared reference directory beside the repository (never copied into it);
// ESO_CRDS overrides the path (e.g. for a worktree that is not next to shared/).
import { existsSync, readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { packageRoot } from '../../../src/api/crds.js';

export interface Schema {
  type?: string;
  format?: string;
  pattern?: string;
  enum?: unknown[];
  default?: unknown;
  nullable?: boolean;
  required?: string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  maxLength?: number;
  minLength?: number;
  maxItems?: number;
  minItems?: number;
  maxProperties?: number;
  minProperties?: number;
  maximum?: number;
  minimum?: number;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-validations'?: { rule: string; message?: string }[];
}

export interface RawVersion {
  name: string;
  served: boolean;
  storage: boolean;
  schema: { openAPIV3Schema: Schema };
}

export interface RawCrd {
  metadata: { name: string };
  spec: { group: string; scope: string; names: { kind: string; plural: string }; versions: RawVersion[] };
}

export const ESO_GROUP = 'external-secrets.io';

/** Where ESO's bundle is: $ESO_CRDS, else ../shared/reference/eso-crds.yaml from the repo. */
export function esoBundlePath(): string {
  return process.env.ESO_CRDS ?? resolve(packageRoot(), '..', 'shared', 'reference', 'eso-crds.yaml');
}

/** Why the ESO comparison cannot run here (the bundle is not in this clone: it lives beside
 *  it, in ../shared/reference/), or undefined when it can. Tests skip with this message. */
export function esoBundleMissing(): string | undefined {
  const path = esoBundlePath();
  if (existsSync(path)) return undefined;
  return `ESO's CRD bundle is missing: ${path} (../shared/reference/eso-crds.yaml beside the repository, or $ESO_CRDS) — ESO comparison skipped`;
}

let cache: RawCrd[] | undefined;

/** ESO's CRDs of the external-secrets.io group, or of `group` (e.g. generators.external-secrets.io). */
export function loadEsoCrds(group = ESO_GROUP): RawCrd[] {
  const path = esoBundlePath();
  if (!existsSync(path)) {
    throw new Error(`ESO's CRD bundle not found at ${path}: it ships in shared/reference/ beside the repository; set ESO_CRDS to its path`);
  }
  cache ??= parseAllDocuments(readFileSync(path, 'utf8'))
    .map((d) => d.toJS() as RawCrd | null)
    .filter((c): c is RawCrd => c !== null);
  return cache.filter((c) => c.spec?.group === group);
}

export function servedVersions(crd: RawCrd): RawVersion[] {
  return crd.spec.versions.filter((v) => v.served);
}

export { join };

/** CEL rules about ESI's own extensions (the grpc provider, which ESO lacks): they hold
 *  for every document that does not use the extension, so they reject nothing ESO accepts. */
const ESI_ONLY_RULE = /^!has\(self\.provider\.grpc\)/;

const LOWER_BOUNDS = ['minLength', 'minItems', 'minProperties', 'minimum'] as const;
const UPPER_BOUNDS = ['maxLength', 'maxItems', 'maxProperties', 'maximum'] as const;

function preservesUnknown(s: Schema): boolean {
  return s['x-kubernetes-preserve-unknown-fields'] === true;
}

/** false when ESI's type rejects values of ESO's type (the caller stops descending). */
function checkType(eso: Schema, esi: Schema, path: string, out: string[]): boolean {
  if (esi.type === undefined) {
    if (!preservesUnknown(esi) && esi['x-kubernetes-int-or-string'] !== true) out.push(`${path}: untyped`);
    return true;
  }
  const intOrString = eso['x-kubernetes-int-or-string'] === true;
  const ok = intOrString ? esi['x-kubernetes-int-or-string'] === true : esi.type === eso.type || (esi.type === 'number' && eso.type === 'integer');
  if (!ok) out.push(`${path}: type ${esi.type}, ESO ${intOrString ? 'int-or-string' : eso.type}`);
  return ok;
}

function checkBounds(eso: Schema, esi: Schema, path: string, out: string[]): void {
  const narrower = (k: (typeof LOWER_BOUNDS)[number] | (typeof UPPER_BOUNDS)[number], lower: boolean) =>
    esi[k] !== undefined && (eso[k] === undefined || (lower ? esi[k]! > eso[k]! : esi[k]! < eso[k]!));
  for (const k of LOWER_BOUNDS) if (narrower(k, true)) out.push(`${path}: ${k} ${esi[k]} (ESO ${eso[k] ?? 'none'})`);
  for (const k of UPPER_BOUNDS) if (narrower(k, false)) out.push(`${path}: ${k} ${esi[k]} (ESO ${eso[k] ?? 'none'})`);
}

function checkValues(eso: Schema, esi: Schema, path: string, out: string[]): void {
  if (esi.enum !== undefined) {
    const missing = (eso.enum ?? ['(any)']).filter((v) => !esi.enum!.some((e) => isDeepStrictEqual(e, v)));
    if (missing.length) out.push(`${path}: enum lacks ${missing.map((v) => JSON.stringify(v)).join(', ')}`);
  }
  checkBounds(eso, esi, path, out);
  for (const k of ['pattern', 'format'] as const) {
    if (esi[k] !== undefined && esi[k] !== eso[k]) out.push(`${path}: ${k} ${esi[k]} (ESO ${eso[k] ?? 'none'})`);
  }
  if (eso.nullable && !esi.nullable) out.push(`${path}: not nullable (ESO is)`);
  if (esi.default !== undefined && !isDeepStrictEqual(esi.default, eso.default)) out.push(`${path}: default ${JSON.stringify(esi.default)} (ESO ${JSON.stringify(eso.default)})`);
}

function checkStructure(eso: Schema, esi: Schema, path: string, out: string[]): void {
  const extraRequired = (esi.required ?? []).filter((r) => !(eso.required ?? []).includes(r));
  if (extraRequired.length) out.push(`${path}: requires ${extraRequired.join(', ')} (ESO does not)`);
  const esoRules = new Set((eso['x-kubernetes-validations'] ?? []).map((v) => v.rule.trim()));
  for (const v of esi['x-kubernetes-validations'] ?? []) {
    if (!esoRules.has(v.rule.trim()) && !ESI_ONLY_RULE.test(v.rule)) out.push(`${path}: CEL rule ESO does not have: ${v.rule}`);
  }
  const listType = esi['x-kubernetes-list-type'];
  if (listType !== undefined && listType !== 'atomic' && listType !== eso['x-kubernetes-list-type']) out.push(`${path}: list-type ${listType}`);
  if (esi['x-kubernetes-embedded-resource'] && !eso['x-kubernetes-embedded-resource']) out.push(`${path}: embedded-resource`);
  if (preservesUnknown(eso) && !preservesUnknown(esi)) out.push(`${path}: prunes unknown fields (ESO preserves them)`);
}

function descend(eso: Schema, esi: Schema, path: string, out: string[]): void {
  const free = preservesUnknown(esi);
  for (const [name, child] of Object.entries(eso.properties ?? {})) {
    const mine = esi.properties?.[name] ?? (typeof esi.additionalProperties === 'object' ? esi.additionalProperties : undefined);
    if (mine === undefined && free) continue;
    compareSchemas(child, mine, `${path}.${name}`, out);
  }
  if (eso.items !== undefined) {
    if (esi.items !== undefined) compareSchemas(eso.items, esi.items, `${path}[]`, out);
    else if (!free) out.push(`${path}[]: missing items`);
  }
  if (eso.additionalProperties !== undefined && eso.additionalProperties !== false) {
    const esoAp = eso.additionalProperties === true ? {} : eso.additionalProperties;
    if (typeof esi.additionalProperties === 'object') compareSchemas(esoAp, esi.additionalProperties, `${path}{}`, out);
    else if (!free && esi.additionalProperties !== true) out.push(`${path}{}: map values not accepted`);
  }
}

/** Appends to `out` every way in which ESI's schema `esi` rejects or alters a value that
 *  ESO's schema `eso` accepts and stores as is. Extra ESI fields are fine (superset). */
export function compareSchemas(eso: Schema, esi: Schema | undefined, path: string, out: string[]): void {
  if (esi === undefined) {
    out.push(`${path}: missing`);
    return;
  }
  if (!checkType(eso, esi, path, out)) return;
  checkValues(eso, esi, path, out);
  checkStructure(eso, esi, path, out);
  descend(eso, esi, path, out);
}

/** Every way ESI's CRD set rejects what ESO's served versions accept (empty: superset);
 *  `eso`: the ESO CRDs compared (those of the external-secrets.io group by default). */
export function supersetProblems(esi: RawCrd[], eso: RawCrd[] = loadEsoCrds()): string[] {
  const out: string[] = [];
  const mine = new Map(esi.map((c) => [c.metadata.name, c]));
  for (const crd of eso) {
    const esiCrd = mine.get(crd.metadata.name);
    if (!esiCrd) {
      out.push(`${crd.spec.names.kind}: no CRD ${crd.metadata.name}`);
      continue;
    }
    if (esiCrd.spec.scope !== crd.spec.scope) out.push(`${crd.spec.names.kind}: scope ${esiCrd.spec.scope}, ESO ${crd.spec.scope}`);
    for (const v of servedVersions(crd)) {
      const ev = esiCrd.spec.versions.find((x) => x.name === v.name && x.served);
      if (!ev) {
        out.push(`${crd.spec.names.kind}/${v.name}: not served`);
        continue;
      }
      const eso = v.schema.openAPIV3Schema;
      const esiSchema = ev.schema.openAPIV3Schema;
      // status is written by the controller that serves the object, not by users.
      const { status: _s, ...esoTop } = eso.properties ?? {};
      compareSchemas({ ...eso, properties: esoTop }, esiSchema, `${crd.spec.names.kind}/${v.name}`, out);
    }
  }
  return out;
}

// ESI's external-secrets.io CRDs accept everything ESO's published CRDs accept: for every
// kind and served version of ESO's bundle, every property path ESO allows is allowed by
// ESI with a compatible type, no narrower enum, bound, pattern or required list, no
// default ESO lacks and no CEL rule ESO lacks. Catches drift when ESO's API grows.
import t from 'tap';
import { loadCrdManifests } from '../../../src/api/crds.js';
import { GENERATORS_GROUP } from '../../../src/api/generators.js';
import { compareSchemas, esoBundleMissing, loadEsoCrds, servedVersions, supersetProblems, type RawCrd, type Schema } from '../../support/eso/schema.js';

const esi = (await loadCrdManifests()) as unknown as RawCrd[];
const skip = esoBundleMissing() ?? false;

t.test('ESO bundle: the external-secrets.io kinds ESI must accept', { skip }, async (t) => {
  const kinds = loadEsoCrds().map((c) => `${c.spec.names.kind}/${servedVersions(c).map((v) => v.name).join(',')}`).sort();
  t.same(kinds, [
    'ClusterExternalSecret/v1',
    'ClusterPushSecret/v1alpha1',
    'ClusterSecretStore/v1',
    'ExternalSecret/v1',
    'PushSecret/v1alpha1',
    'SecretStore/v1',
  ]);
});

t.test('every path ESO allows is allowed by ESI (structural superset)', { skip }, async (t) => {
  t.same(supersetProblems(esi), [], 'no ESO document is rejected or altered by ESI\'s schema');
});

t.test('the generators ESI serves accept everything ESO\'s accept', { skip }, async (t) => {
  const served = new Set(esi.filter((c) => c.spec.group === GENERATORS_GROUP).map((c) => c.metadata.name));
  t.same([...served].map((n) => n.split('.')[0]).sort(), ['clustergenerators', 'ecrauthorizationtokens', 'fakes', 'generatorstates', 'passwords', 'uuids', 'vaultdynamicsecrets']);
  const eso = loadEsoCrds(GENERATORS_GROUP).filter((c) => served.has(c.metadata.name));
  t.equal(eso.length, served.size, 'ESO defines every generator kind ESI ships');
  t.same(supersetProblems(esi, eso), [], 'no ESO generator document is rejected or altered by ESI\'s schema');
});

t.test('the comparison catches what would reject ESO documents', async (t) => {
  const eso: Schema = {
    type: 'object',
    properties: {
      a: { type: 'string', enum: ['x', 'y'] },
      b: { type: 'integer' },
      c: { type: 'object', properties: { d: { type: 'string' } } },
      e: { type: 'array', items: { type: 'string' } },
      f: { type: 'string', default: 'v' },
      g: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
    },
  };
  const esiSchema: Schema = {
    type: 'object',
    required: ['a'],
    properties: {
      a: { type: 'string', enum: ['x'] },
      b: { type: 'string' },
      c: { type: 'object', properties: {} },
      e: { type: 'array', maxItems: 3, items: { type: 'string', minLength: 1 } },
      f: { type: 'string', default: 'w', 'x-kubernetes-validations': [{ rule: 'size(self) > 1' }] },
      g: { type: 'object', properties: {} },
    },
  };
  const out: string[] = [];
  compareSchemas(eso, esiSchema, 'X', out);
  t.same(out.sort(), [
    'X.a: enum lacks "y"',
    'X.b: type string, ESO integer',
    'X.c.d: missing',
    'X.e: maxItems 3 (ESO none)',
    'X.e[]: minLength 1 (ESO none)',
    'X.f: CEL rule ESO does not have: size(self) > 1',
    'X.f: default "w" (ESO "v")',
    'X.g: prunes unknown fields (ESO preserves them)',
    'X: requires a (ESO does not)',
  ]);
  const free: string[] = [];
  compareSchemas(eso, { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }, 'Y', free);
  t.same(free, [], 'a free-form object accepts everything below it');
});

// The managed-Secret cache holds what the controller wrote: anyone who may write
// Secrets can put `esi.dev/managed=true` on any Secret, so a labelled Secret is trusted from
// the cache only when it names its ExternalSecret and matches ESI's data hash; for the others
// the cache keeps metadata alone and lookups miss (the reconciler then reads the API). Even a
// trusted one keeps no value unless it is a Merge target (src/controller/runtime/cached-secret.ts).
import t from 'tap';
import type { V1Secret } from '@kubernetes/client-node';
import { slim } from '../../../../src/controller/runtime/informers.js';
import { dataElided, trusted } from '../../../../src/controller/runtime/cached-secret.js';
import { DATA_HASH_ANNOTATION, EXTERNAL_SECRET_ANNOTATION, MANAGED_LABEL, MERGED_KEYS_ANNOTATION } from '../../../../src/controller/runtime/labels.js';
import { contentHash } from '../../../../src/controller/runtime/labels.js';

const big = Buffer.alloc(900 * 1024, 'x').toString('base64');
const secret = (annotations: Record<string, string>, data: Record<string, string>): V1Secret => ({
  apiVersion: 'v1', kind: 'Secret', type: 'Opaque',
  metadata: { name: 's', namespace: 'ns', labels: { [MANAGED_LABEL]: 'true' }, annotations, managedFields: [{}] },
  data,
});

t.test('a labelled Secret that ESI did not write keeps no data in the cache', async (t) => {
  const s = slim('secrets', secret({}, { blob: big }));
  t.equal(s.data, undefined, 'data dropped');
  t.equal(s.metadata?.managedFields, undefined);
  t.equal(s.metadata?.labels?.[MANAGED_LABEL], 'true', 'metadata kept (the watch still sees it)');
});

t.test('a forged ownership annotation without a matching hash keeps no data', async (t) => {
  const s = slim('secrets', secret({ [EXTERNAL_SECRET_ANNOTATION]: 'es', [DATA_HASH_ANNOTATION]: 'not-the-hash' }, { blob: big }));
  t.equal(s.data, undefined);
  t.equal(trusted(s), undefined, 'not served from the cache');
});

t.test('a Secret as ESI wrote it is trusted and cached without its values', async (t) => {
  const data = { password: Buffer.from('pw').toString('base64') };
  const s = slim('secrets', secret({ [EXTERNAL_SECRET_ANNOTATION]: 'es', [DATA_HASH_ANNOTATION]: contentHash('Opaque', data) }, data));
  t.equal(s.data, undefined, 'no value in the cache');
  t.equal(trusted(s), s, 'served from the cache');
  t.ok(dataElided(s));
  t.equal(slim('secrets', s), s, 'a second pass (another handler) keeps the verdict');
  t.equal(trusted(s), s);
});

t.test('a Merge target as ESI wrote it keeps its data (a write merges into its other keys)', async (t) => {
  const data = { theirs: Buffer.from('x').toString('base64'), mine: Buffer.from('pw').toString('base64') };
  const s = slim('secrets', secret({
    [EXTERNAL_SECRET_ANNOTATION]: 'es', [MERGED_KEYS_ANNOTATION]: 'mine', [DATA_HASH_ANNOTATION]: contentHash('Opaque', data, ['mine']),
  }, data));
  t.same(s.data, data);
  t.equal(trusted(s), s);
  t.notOk(dataElided(s));
});

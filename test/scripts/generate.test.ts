// The one freshness test of generated code: every file `npm run generate`
// writes (scripts/generate.ts: the agent-config validator, the cluster-scoped CRDs, the pod
// annotations reference) is committed exactly as its generator produces it now. A change to a
// source (the agent-config schema, the namespaced CRDs, the annotation table) without
// `npm run generate` fails here, naming the file.
import t from 'tap';
import { committed, generatedFiles } from '../../scripts/generate.js';

const files = await generatedFiles();

t.same([...files.keys()].sort(), [
  'charts/esi/files/crds/external-secrets.io_clusterexternalsecrets.yaml',
  'charts/esi/files/crds/external-secrets.io_clusterpushsecrets.yaml',
  'charts/esi/files/crds/external-secrets.io_clustersecretstores.yaml',
  ...['clustergenerators', 'ecrauthorizationtokens', 'fakes', 'generatorstates', 'passwords', 'uuids', 'vaultdynamicsecrets'].map((p) => `charts/esi/files/crds/generators.external-secrets.io_${p}.yaml`),
  'docs/annotations.md',
  'src/agent-config/validator.generated.ts',
], 'what npm run generate writes');

for (const [path, text] of files) {
  t.test(path, async (t) => {
    t.equal(await committed(path), text, `${path} is up to date (run \`npm run generate\` after changing its source)`);
  });
}

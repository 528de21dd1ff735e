// `esi inject` on malformed input: a clear message naming the field and exit code 2
// (bad input), never a raw TypeError and never exit 1 (which means "the webhook denies").
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { main } from '../../webhook/inject-cmd.js';
import { tempRoot } from '../support/fixtures/agent.js';

async function run(yaml: string, dir: string): Promise<{ code: number; stderr: string }> {
  const file = join(dir, `pod-${Math.random().toString(16).slice(2)}.yaml`);
  await writeFile(file, yaml);
  let stderr = '';
  const write = process.stderr.write.bind(process.stderr);
  const out = process.stdout.write.bind(process.stdout);
  process.stderr.write = ((s: string) => ((stderr += s), true)) as typeof process.stderr.write;
  process.stdout.write = (() => true) as typeof process.stdout.write;
  try {
    return { code: await main(['-f', file]), stderr };
  } finally {
    process.stderr.write = write;
    process.stdout.write = out;
  }
}

const labelled = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {esi.dev/inject: "true"}\n  annotations: {esi.dev/secrets: db}\n';

t.test('malformed pod shapes exit 2 with the field named', async (t) => {
  const dir = await tempRoot(t);
  const cases: [string, RegExp][] = [
    [`${labelled}spec:\n  containers: app\n`, /spec\.containers: must be a list/],
    [`${labelled}spec:\n  containers: [null]\n`, /spec\.containers\[0\]: must be a container object/],
    [`${labelled}spec:\n  containers: [{name: a, volumeMounts: 7}]\n`, /spec\.containers\[0\]\.volumeMounts: must be a list/],
    ['apiVersion: v1\nkind: Pod\nmetadata: [1]\n', /metadata: must be an object/],
  ];
  for (const [yaml, re] of cases) {
    const r = await run(yaml, dir);
    t.equal(r.code, 2, yaml);
    t.match(r.stderr, re, yaml);
    t.notMatch(r.stderr, /TypeError|at .*\.ts:\d+/, 'no raw exception');
  }
});

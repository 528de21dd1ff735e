// Differential test: ESI's WebAssembly Go template engine (what the webhook and agent run)
// against the same Go program compiled natively, over ESO's documented template uses and
// a few thousand generated templates and inputs (Sprig functions, ESO helpers, control
// structures, error paths; seeded, so a failure reproduces). Outputs and error messages
// must be identical byte for byte.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { builtEngineDir } from '../../../../src/templating/go/locate.js';
import { callEngine, stopEngine } from '../../../../src/templating/go/runner.js';
import { documented, generated } from '../../../support/templating/go-corpus.js';

t.teardown(stopEngine);
const native = join(builtEngineDir(), 'engine-native');
if (!existsSync(native)) throw new Error(`${native} missing: run npm run build:gotemplate`);

t.test('the WebAssembly engine renders exactly as the native Go engine', async (t) => {
  const requests = [...documented(), ...generated(3000, 20261123), ...generated(500, 7).map((r) => ({ parseOnly: true, ...r }))];
  const jobs = requests.reduce((n, r) => n + r.jobs.length, 0);
  const ref = spawnSync(native, [], { input: requests.map((r) => JSON.stringify(r)).join('\n') + '\n', maxBuffer: 256 * 1024 * 1024, timeout: 120_000 });
  t.equal(ref.status, 0, 'native reference ran');
  const expected = ref.stdout.toString('utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { results: { output?: string; error?: string }[] });
  t.equal(expected.length, requests.length);
  let same = 0;
  let errors = 0;
  const diffs: string[] = [];
  requests.forEach((req, i) => {
    const got = callEngine(req, 30_000) as { results: { output?: string; error?: string }[] };
    got.results.forEach((res, j) => {
      const want = expected[i]!.results[j]!;
      if (res.error !== undefined) errors++;
      if (res.output === want.output && res.error === want.error) same++;
      else if (diffs.length < 10) diffs.push(`${req.jobs[j]!.name} ${JSON.stringify(req.jobs[j]!.source)}: wasm ${JSON.stringify(res)} native ${JSON.stringify(want)}`);
    });
  });
  t.same(diffs, [], 'no difference');
  t.equal(same, jobs, `${jobs} templates identical (${errors} of them errors)`);
  t.ok(errors > 100 && errors < jobs - 1000, 'the corpus exercises both outputs and error paths');
});

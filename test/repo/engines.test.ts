// package.json's `engines.node` is a promise to users: every package the lockfile installs must
// run on the oldest Node it names. A transitive upgrade once pulled cookie@2 (Node >= 22) in
// through fastify's light-my-request; `overrides` in package.json pins it back.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import t from 'tap';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[]; dev?: boolean; optional?: boolean }>;
};

t.test('every locked package runs on the oldest Node that engines names', async (t) => {
  const oldest = semver.minVersion(pkg.engines.node)!.version;
  t.equal(oldest, '20.19.0');
  const refused: string[] = [];
  let checked = 0;
  for (const [path, p] of Object.entries(lock.packages)) {
    const range = !Array.isArray(p.engines) ? p.engines?.node : undefined;
    if (!path || !range) continue;
    checked++;
    if (!semver.satisfies(oldest, range, { includePrerelease: true })) refused.push(`${path.replace(/^.*node_modules\//, '')}@${p.version} needs node ${range}`);
  }
  t.ok(checked > 50, `${checked} packages name a Node range`);
  t.same(refused, [], 'packages that would not run on the oldest supported Node');
});

t.test('the check finds a package that needs a newer Node', async (t) => {
  t.notOk(semver.satisfies('20.19.0', '>=22'));
  t.ok(semver.satisfies('20.19.0', '^18.17.0 || >=20.5.0'));
});

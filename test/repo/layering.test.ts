// The layering the lint enforces (eslint.config.js): src/ never imports the roles (webhook/,
// injector/), statically or with import(), except src/cli, the one composition root (the
// `esi` command), which nothing imports. Each rule is shown firing on a sample file placed
// where it applies, and staying quiet where it does not.
import t from 'tap';
import { ESLint } from 'eslint';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const eslint = new ESLint({ cwd: root });

/** The restricted-import and restricted-syntax messages of `code` placed at `file`. */
async function layering(file: string, code: string): Promise<string[]> {
  const [res] = await eslint.lintText(code, { filePath: join(root, file) });
  return res!.messages.filter((m) => m.ruleId === 'no-restricted-imports' || m.ruleId === 'no-restricted-syntax').map((m) => m.message);
}

const LOAD_ROLES = [
  "export const w = async () => (await import('../../webhook/cmd.js')).main;",
  "export const a = async () => (await import('../../injector/cmd.js')).main;",
].join('\n');

t.test('only src/cli may import() a role', async (t) => {
  const elsewhere = await layering('src/controller/example.ts', LOAD_ROLES);
  t.equal(elsewhere.length, 2, 'both dynamic imports are flagged outside src/cli');
  for (const m of elsewhere) t.match(m, /only src\/cli \(the composition root\) may import\(\) the webhook or the agent/);
  t.same(await layering('src/cli/example.ts', LOAD_ROLES), [], 'src/cli may');
  t.same(await layering('src/controller/example.ts', "export const p = () => import('../providers/fake/index.js');"), [], 'other lazy imports are fine');
});

t.test('a static import of a role is refused in src/ (src/cli included)', async (t) => {
  for (const file of ['src/controller/example.ts', 'src/cli/example.ts']) {
    const messages = await layering(file, "import { main } from '../../webhook/cmd.js';\nexport { main };");
    t.match(messages, [/src\/ must not import the agent \(injector\/\) or the webhook/], file);
  }
});

t.test('nothing imports src/cli', async (t) => {
  const code = "import { run } from '../cli/main.js';\nexport { run };";
  for (const file of ['src/controller/example.ts', 'src/providers/example.ts']) {
    t.match(await layering(file, code), [/src\/cli is the composition root/], file);
  }
  t.match(await layering('webhook/example.ts', "import { run } from '../src/cli/main.js';\nexport { run };"), [/src\/cli is the composition root/], 'webhook/');
  t.match(await layering('injector/example.ts', "import { run } from '../src/cli/main.js';\nexport { run };"), [/src\/cli is the composition root/], 'injector/');
});

t.test("the controller's runtime/ imports no kind's folder; the kinds use runtime/", async (t) => {
  const code = "import type { Outcome } from '../externalsecret/reconcile.js';\nexport type O = Outcome;";
  t.match(await layering('src/controller/runtime/example.ts', code), [/src\/controller\/runtime\/ is used by the kinds' folders and imports none of them/]);
  t.same(await layering('src/controller/runtime/example.ts', "import { fetchExternalSecret } from '../../externalsecret/fetch.js';\nexport { fetchExternalSecret };"), [], 'src/externalsecret (the ES semantics) is not a kind folder');
  t.same(await layering('src/controller/externalsecret/example.ts', "import { WorkQueue } from '../runtime/queue.js';\nexport { WorkQueue };"), [], 'a kind uses runtime/');
});

t.test('the tree itself keeps the rules', async (t) => {
  const results = await eslint.lintFiles(['src/cli/**/*.ts', 'src/controller/cmd.ts', 'src/controller/runtime/*.ts', 'webhook/cmd.ts']);
  t.same(results.flatMap((r) => r.messages.filter((m) => m.severity === 2).map((m) => `${r.filePath}: ${m.message}`)), []);
});

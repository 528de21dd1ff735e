// What `esi agent` loads at start (bin/esi.js runs dist/bundle/agent/, `npm run build`): the
// agent's own bundle, split for the agent's imports alone, with pino bundled and without its
// worker transports (docs/decisions/0005-agent-footprint.md). Each chunk loaded at start is a
// module Node resolves, reads, compiles and links; each CommonJS file a resolution and a read.
// No cluster needed; reads the built bundle.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLE, startClosure } from '../support/bundle-closure.js';

/** The chunks Node loads for `esi agent` from `dir` before its first file. */
const agentClosure = (dir: string) => startClosure(dir, 'Usage: esi agent');

t.test("esi agent runs from its own bundle, which loads fewer chunks than the shared one", { skip: existsSync(join(BUNDLE, 'agent')) ? false : 'dist/bundle/agent missing: npm run build' }, async (tt) => {
  const own = agentClosure(join(BUNDLE, 'agent'));
  const shared = agentClosure(BUNDLE);
  tt.ok(own.size < shared.size, `chunks loaded at start: ${own.size} from dist/bundle/agent, ${shared.size} from dist/bundle`);
  const all = [...own.values()].join('\n');
  tt.notMatch(all, /from\s*"pino"|require\("pino"\)/, 'pino is bundled, not loaded file by file from node_modules');
  tt.notMatch(all, /ThreadStream|thread-stream/, "without pino's worker transports");
  tt.notMatch(all, /from\s*"(node:)?worker_threads"/, 'node:worker_threads is not loaded at start');
  // Node.js 22 builds an ES module import's namespace of node:http from every export, three of
  // them getters that load undici, node:http2 and node:worker_threads (scripts/bundle.ts).
  tt.notMatch(all, /(from|import)\s*"(node:)?http"/, 'node:http is required, never imported as an ES module');
  tt.match(all, /require\("node:http"\)/, 'through the one stand-in of scripts/bundle.ts');
  tt.match(all, /handlebars\/dist\/handlebars\.min\.js/, 'handlebars stays a lazy require of its minified single file');
  tt.notMatch(all, /from\s*"node-forge"|import\s*"node-forge"/, 'node-forge is not imported at start: ESO\'s PKCS#12 and certificate helpers require it when called');
  const files = readdirSync(join(BUNDLE, 'agent', 'chunks')).filter((f) => f.endsWith('.mjs'));
  tt.notOk(files.some((f) => readFileSync(join(BUNDLE, 'agent', 'chunks', f), 'utf8').includes('Serves the ESI mutating admission webhook')), 'and holds no webhook code');
});

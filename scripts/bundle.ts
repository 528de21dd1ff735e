// Bundles the compiled `esi` command (dist/src, dist/webhook, dist/injector — tsc's output)
// into dist/bundle/ with esbuild, and bin/esi.js runs that bundle. Why
// (docs/decisions/0046-bundled-entry.md): loading @kubernetes/client-node as its ~2,000
// separate ES modules costs the webhook ~45 MiB of private memory that the same code bundled
// does not (V8 compiles functions lazily either way; the per-module records do not go away),
// and resolving node-vault's CommonJS tree file by file is most of the agent's start time.
//
// Splitting keeps each subcommand's lazy import (src/cli/main.ts) a separate chunk, so
// `esi agent` never loads the webhook's or the reconciler's code. Packages stay outside the
// bundle (loaded from node_modules as before) when they find files next to their own
// sources at run time (pino's worker transports, the Google and gRPC protos), when the code
// loads them through createRequire (src/templating/lazy.ts), or when they are a provider SDK
// loaded lazily per store anyway.
//
//   tsx scripts/bundle.ts [--dist dist] [--metafile out.json]
import { build, type BuildOptions, type Plugin } from 'esbuild';
import { rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const EXTERNAL = [
  '@aws-sdk/*',
  '@azure/*',
  '@google-cloud/*',
  '@grpc/*',
  'google-auth-library',
  'handlebars',
  'node-forge',
  'pino',
  // Loaded with import() (injector/metrics.ts): Node gives a CommonJS package's named exports
  // to import(); esbuild's bundled import() would give only its default export.
  'prom-client',
  'yaml',
];

/**
 * Lets esbuild drop the modules of a package that the bundle never uses. esbuild keeps
 * every imported module unless its package says it has no side effects, and
 * @kubernetes/client-node does not say so although its modules (generated models and API
 * classes, auth helpers) only define classes and functions; without this, the webhook, which
 * uses KubeConfig and the informer, would load every generated model.
 */
function sideEffectFree(path: RegExp): Plugin {
  return {
    name: 'side-effect-free',
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === 'side-effect-free') return undefined;
        const r = await b.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: 'side-effect-free' });
        if (r.errors.length > 0 || r.external || !path.test(r.path)) return undefined;
        return { ...r, sideEffects: false };
      });
    },
  };
}

/**
 * Stand-ins for modules a package imports but, as ESI calls it, never uses. Each replaces one
 * import of one importer only, and is exact for the use it stands in for or fails loudly.
 *
 * - node-vault loads axios and debug when it is imported but calls neither when it is given a
 *   transport (its `request-promise` option) and a logger (`debug`), and the vault provider
 *   always gives both (src/providers/vault/http.ts, transport.ts). axios and what it pulls in (follow-redirects,
 *   form-data, mime-db, proxy-from-env, its fetch probe) were ~10 MiB of the agent's private
 *   memory and a tenth of its start; the axios stand-in fails loudly if it is ever called.
 * - node-fetch 2 (@kubernetes/client-node's HTTP client) loads whatwg-url only as a fallback
 *   for a Node.js without a global `URL` (`Url.URL || whatwgUrl.URL`); loading it runs tr46's
 *   Unicode mapping table, ~2 MiB of every process's heap (docs/performance/webhook-memory.md).
 * - client-node's informer (cache.js, ListWatch) loads its ObjectSerializer only to pass the
 *   label and field selectors through `serialize(value, 'string')`, which returns a string as
 *   it is; the real one names every generated model class, so the webhook (which uses no
 *   generated API) loaded all ~720 of them for it. The stand-in does the same for a string.
 * - pino loads its worker-thread transports (its lib/transport module, thread-stream) when it is
 *   imported, and calls them only for the `transport` option, which ESI never passes (one
 *   JSON line per record to stdout). pino is bundled into the agent's bundle only (agentOnly
 *   below); elsewhere it stays external and the stand-in is never reached.
 * - client-node's config.js (KubeConfig) takes two names from the generated code's barrel
 *   (the index.js of its gen folder). esbuild splits chunks per file, and through the barrel's `export *` every
 *   generated API and model the build uses anywhere became part of the chunk every command
 *   loads; the stand-in barrel re-exports just those two names from their own files.
 */
const STAND_INS: { importer: RegExp; path: string; contents: string; resolveDir?: string }[] = [
  {
    importer: /[\\/]node_modules[\\/]node-vault[\\/]/, path: 'axios',
    contents: "module.exports = { create() { throw new Error('node-vault without a transport: the vault provider passes request-promise (src/providers/vault/transport.ts)'); } };",
  },
  { importer: /[\\/]node_modules[\\/]node-vault[\\/]/, path: 'debug', contents: 'module.exports = () => function off() {};' },
  { importer: /[\\/]node_modules[\\/]node-fetch[\\/]/, path: 'whatwg-url', contents: "module.exports = { URL: require('node:url').URL };" },
  // pino's tools.js reads worker_threads' isMainThread once, to flush on exit in the main
  // thread. In the agent's bundle pino runs only in the main thread, and nothing else in the
  // agent loads node:worker_threads (~0.4 MiB).
  { importer: /[\\/]node_modules[\\/]pino[\\/]lib[\\/]tools\.js$/, path: 'worker_threads', contents: 'module.exports = { isMainThread: true };' },
  ...['./lib/transport', './transport'].map((path) => ({
    importer: /[\\/]node_modules[\\/]pino[\\/]/, path,
    contents: "module.exports = function transport() { throw new Error('pino transports are not in the agent bundle (scripts/bundle.ts)'); };",
  })),
  {
    importer: /[\\/]node_modules[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]cache\.js$/, path: './serializer.js',
    contents: "module.exports = { ObjectSerializer: { serialize(value, type) { if (type !== 'string') throw new Error('client-node cache.js: serializer stand-in (scripts/bundle.ts) got type ' + type); return value; } } };",
  },
  {
    importer: /[\\/]node_modules[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]config\.js$/, path: './gen/index.js', resolveDir: 'gen',
    contents: "export { createConfiguration } from './configuration.js'; export { ServerConfiguration } from './servers.js';",
  },
];
const standIns: Plugin = {
  name: 'stand-ins',
  setup(b) {
    b.onResolve({ filter: /^(axios|debug|worker_threads|whatwg-url|\.\/(lib\/)?transport|\.\/serializer\.js|\.\/gen\/index\.js)$/ }, (args) => {
      const i = STAND_INS.findIndex((s) => s.path === args.path && s.importer.test(args.importer));
      return i < 0 ? undefined : { path: String(i), namespace: 'stand-in', pluginData: args.resolveDir };
    });
    b.onLoad({ filter: /.*/, namespace: 'stand-in' }, (args) => {
      const s = STAND_INS[Number(args.path)]!;
      return { contents: s.contents, loader: 'js', ...(s.resolveDir ? { resolveDir: join(args.pluginData as string, s.resolveDir) } : {}) };
    });
  },
};

/**
 * `node:http` through require() in every ES module of the bundles. On Node.js 22 an ES module
 * import of `node:http` (any form: default, named, namespace) builds the module's namespace
 * by reading every export, and three of them are lazy getters (WebSocket, CloseEvent,
 * MessageEvent) that load undici, node:http2 and node:worker_threads: +5.5 MiB of private
 * memory in a bare `node` (7.5 → 13.0 MiB RssAnon), a third of the agent's
 * (docs/performance/agent-startup.md). require() returns the module object without reading
 * them. The stand-in re-exports the names the code imports; a name missing here fails the
 * build ("No matching export"), not the run.
 */
const HTTP_NAMES = ['Agent', 'ClientRequest', 'IncomingMessage', 'METHODS', 'OutgoingMessage', 'STATUS_CODES', 'Server', 'ServerResponse',
  'createServer', 'get', 'request', 'validateHeaderName', 'validateHeaderValue'];
const httpByRequire: Plugin = {
  name: 'http-by-require',
  setup(b) {
    b.onResolve({ filter: /^(node:)?http$/ }, (args) =>
      args.kind === 'import-statement' || args.kind === 'dynamic-import' ? { path: 'node:http', namespace: 'http-by-require' } : undefined);
    b.onLoad({ filter: /.*/, namespace: 'http-by-require' }, () => ({
      contents: `const http = require('node:http');\nexport default http;\nexport const { ${HTTP_NAMES.join(', ')} } = http;\n`, loader: 'js',
    }));
  },
};

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/**
 * The agent's own bundle (dist/bundle/agent/, which bin/esi.js runs for `esi agent`): the same
 * CLI entry with every subcommand but `agent` left out, so esbuild splits chunks for the
 * agent's imports alone. Split together with the webhook's and the reconciler's code, the
 * agent's static imports were 33 chunks (each one a module Node resolves, reads, compiles
 * and links at start); split alone, 25. pino is bundled there too (its ~30 CommonJS files
 * were each resolved and read at start; the stand-in above drops its transports). Both
 * together: ~14 % less time to the first file (docs/performance/agent-startup.md). The other
 * subcommands stay unresolved imports there: bin/esi.js never runs them from it.
 */
const agentOnly: Plugin = {
  name: 'agent-only',
  setup(b) {
    // Every subcommand main.js imports on demand (a dynamic import), whatever its file is named.
    b.onResolve({ filter: /.*/ }, (args) =>
      args.kind === 'dynamic-import' && /[\\/]src[\\/]cli[\\/]main\.js$/.test(args.importer) && args.path !== '../../injector/cmd.js'
        ? { path: args.path, external: true } : undefined);
  },
};

const dist = resolve(arg('--dist') ?? 'dist');
const outdir = join(dist, 'bundle');
rmSync(outdir, { recursive: true, force: true });
const common = {
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: EXTERNAL,
  // CommonJS packages inside an ES module bundle still call require() and read __dirname.
  banner: {
    js: "import { createRequire as __esiRequire } from 'node:module'; const require = __esiRequire(import.meta.url);",
  },
  outExtension: { '.js': '.mjs' },
  chunkNames: 'chunks/[name]-[hash]',
  legalComments: 'linked',
  // Whitespace and syntax only, names stay: the source text of each loaded chunk stays in
  // the heap for the life of the process (two bytes per character once one comment holds a
  // non-ASCII character), and stack traces keep readable function names. The source map
  // leads back to dist/ under `node --enable-source-maps`.
  minifyWhitespace: true,
  minifySyntax: true,
  charset: 'ascii',
  sourcemap: 'linked',
  sourcesContent: false,
  logLevel: 'warning',
} satisfies BuildOptions;
const plugins = [standIns, httpByRequire, sideEffectFree(/[\\/]node_modules[\\/]@kubernetes[\\/]client-node[\\/]/)];
const result = await build({
  ...common,
  // The reconciler's render threads load their own entry (src/templating/pool/pool.ts).
  entryPoints: { esi: join(dist, 'src', 'cli', 'main.js'), 'render-worker': join(dist, 'src', 'templating', 'pool', 'worker.js') },
  outdir,
  plugins,
  metafile: arg('--metafile') !== undefined,
});
await build({
  ...common, external: EXTERNAL.filter((e) => e !== 'pino'),
  entryPoints: { esi: join(dist, 'src', 'cli', 'main.js') }, outdir: join(outdir, 'agent'), plugins: [agentOnly, ...plugins],
});
const meta = arg('--metafile');
if (meta && result.metafile) writeFileSync(meta, JSON.stringify(result.metafile));

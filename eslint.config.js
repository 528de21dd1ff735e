// ESLint flat config: typescript-eslint's recommended rules plus limits that keep
// functions and files small enough to read (complexity, nesting, length, parameters),
// and the layering of the code (docs/design.md, "Layers"): lower layers never import
// upper ones.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const UPPER_LAYERS = {
  // The admission webhook is the repository's top-level webhook/ folder, reached from src/ only
  // by climbing out (`../webhook`); src/providers/webhook/ is the `webhook` store provider.
  regex: '(^|/)injector(/|$)|^(\\.\\./)+webhook(/|$)',
  message: 'src/ must not import the agent (injector/) or the webhook (webhook/): move what both need into src/.',
};
// src/cli is the one composition root: it loads the roles, and nothing loads it.
const CLI = {
  group: ['**/cli/**', '**/cli'],
  message: 'src/cli is the composition root (the `esi` command): nothing imports it; move what you need into src/.',
};
// A dynamic import() is an import too: only src/cli may load a role (webhook/, injector/).
const ROLE_IMPORT_EXPRESSIONS = [{
  // `./webhook/…` inside src/providers is the webhook store provider, not the role.
  selector: 'ImportExpression[source.value=/(^|\\/)injector(\\/|$)|^(\\.\\.\\/)+webhook(\\/|$)/]',
  message: 'only src/cli (the composition root) may import() the webhook or the agent',
}];
const CONSUMERS = {
  group: ['**/agent-config*', '**/agent-config/**', '**/controller/**'],
  message: 'the provider and ExternalSecret layers know no consumer: take a spec-shaped input instead.',
};
// Templating is pure rendering: the ExternalSecret layer uses it (rewrite transforms are Go
// templates), the providers never do.
const TEMPLATING = {
  group: ['**/templating/**', '**/templating'],
  message: 'providers store and fetch bytes; rendering belongs to src/externalsecret or src/templating.',
};
const EXTERNALSECRET = {
  group: ['**/externalsecret/**', '**/externalsecret'],
  message: 'src/providers is below src/externalsecret: move the shared piece into src/providers.',
};

// Inside the reconciler, runtime/ is the machinery every kind's folder uses: it
// imports none of them (runtime/*.ts reaches a kind's folder as `../<kind>/`).
const CONTROLLER_KINDS = {
  regex: '^\\.\\./(externalsecret|pushsecret|cluster|secretstore|generatorstate|restart)(/|$)',
  message: "src/controller/runtime/ is used by the kinds' folders and imports none of them: move the shared piece into runtime/, or pass it in.",
};

// Sockets to an address a store or generator spec names are opened by src/egress/ only
// (SECURITY.md, "The controller's network boundary"): product code elsewhere may not import
// the means to dial. Servers (createServer) and types stay importable. Exempt below: the
// controller's own API client (src/kube/rest.ts, table.ts, metadata-watch.ts: the operator's kubeconfig) and the
// agent's reload call to its own pod's localhost (injector/notify.ts).
const EGRESS_MESSAGE = 'connections to a spec-named address are opened by src/egress/ (connect.ts, http.ts, grpc.ts) only';
const DIAL = ['default', 'request', 'get', 'Agent', 'connect', 'createConnection', 'Socket'];
const EGRESS_PATHS = [
  ...['node:http', 'node:https', 'http', 'https'].map((name) => ({ name, importNames: DIAL, allowTypeImports: true, message: EGRESS_MESSAGE })),
  ...['node:net', 'net', 'node:tls', 'tls'].map((name) => ({ name, importNames: ['default', 'connect', 'createConnection', 'Socket'], allowTypeImports: true, message: EGRESS_MESSAGE })),
  ...['node:http2', 'http2', 'undici'].map((name) => ({ name, allowTypeImports: true, message: EGRESS_MESSAGE })),
  { name: '@grpc/grpc-js', importNames: ['default', 'Client', 'Channel', 'makeClientConstructor', 'makeGenericClientConstructor', 'loadPackageDefinition'], allowTypeImports: true, message: EGRESS_MESSAGE },
];
const EGRESS_EXEMPT = ['src/egress/**', 'src/kube/rest.ts', 'src/kube/table.ts', 'src/kube/metadata-watch.ts', 'injector/notify.ts'];

const KUBE_PATH_MESSAGE = 'build Kubernetes REST paths with resourcePath() from src/kube/paths.ts (validated, encoded names), never by concatenation';
const KUBE_PATH = '/^\\/apis?\\/|(^|\\/)namespaces\\//';
const KUBE_PATH_LITERALS = [
  { selector: `Literal[value=${KUBE_PATH}]`, message: KUBE_PATH_MESSAGE },
  { selector: `TemplateElement[value.raw=${KUBE_PATH}]`, message: KUBE_PATH_MESSAGE },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.esi-run/**', 'coverage/**', '.tap/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      // Optional chaining and `??` count as branches in ESLint's measure, hence 20.
      complexity: ['error', 20],
      'max-depth': ['error', 4],
      'max-nested-callbacks': ['error', 4],
      'max-lines': ['error', { max: 400, skipBlankLines: true, skipComments: true }],
      'max-params': ['error', 4],
      'max-lines-per-function': ['warn', { max: 80, skipBlankLines: true, skipComments: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  { files: ['**/*.js'], languageOptions: { globals: { process: 'readonly', console: 'readonly' } } },
  {
    // src/ is the library both binaries share: it never imports the webhook or the agent,
    // and nothing imports the command (src/cli), which alone loads the roles.
    files: ['src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [UPPER_LAYERS, CLI], paths: EGRESS_PATHS }] },
  },
  {
    files: ['webhook/**/*.ts', 'injector/**/*.ts', 'certs/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [CLI], paths: EGRESS_PATHS }] },
  },
  {
    files: ['src/**/*.ts', 'webhook/**/*.ts', 'injector/**/*.ts', 'certs/**/*.ts'],
    ignores: EGRESS_EXEMPT,
    rules: { 'no-restricted-globals': ['error', ...['fetch', 'WebSocket', 'EventSource'].map((name) => ({ name, message: EGRESS_MESSAGE }))] },
  },
  {
    // Kubernetes REST paths are built by src/kube/paths.ts only, from validated names: a
    // tenant's name concatenated into a URL once climbed out of its namespace with `..`
    // (SECURITY.md, "The controller"). Test code may spell paths out.
    files: ['src/**/*.ts', 'webhook/**/*.ts', 'injector/**/*.ts', 'certs/**/*.ts'],
    ignores: ['src/kube/paths.ts'],
    rules: {
      'no-restricted-syntax': ['error', ...KUBE_PATH_LITERALS],
    },
  },
  {
    // The same for src/ (one rule list per file: a later block replaces the list), with the
    // roles loaded by src/cli only.
    files: ['src/**/*.ts'],
    ignores: ['src/kube/paths.ts', 'src/cli/**'],
    rules: { 'no-restricted-syntax': ['error', ...KUBE_PATH_LITERALS, ...ROLE_IMPORT_EXPRESSIONS] },
  },
  { files: ['src/kube/paths.ts'], rules: { 'no-restricted-syntax': ['error', ...ROLE_IMPORT_EXPRESSIONS] } },
  {
    // Providers and the ExternalSecret layer serve several consumers (agent, reconciler,
    // PushSecret): they know none of them, nor their configuration types.
    files: ['src/providers/**/*.ts', 'src/externalsecret/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [UPPER_LAYERS, CLI, CONSUMERS], paths: EGRESS_PATHS }] },
  },
  {
    // The provider layer sits below the ExternalSecret layer that uses it.
    files: ['src/providers/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [UPPER_LAYERS, CLI, CONSUMERS, TEMPLATING, EXTERNALSECRET], paths: EGRESS_PATHS }] },
  },
  {
    files: ['src/controller/runtime/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [UPPER_LAYERS, CLI, CONTROLLER_KINDS], paths: EGRESS_PATHS }] },
  },
  // The exempt files keep their layering without the egress paths.
  { files: ['src/egress/**/*.ts', 'src/kube/rest.ts', 'src/kube/table.ts', 'src/kube/metadata-watch.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [UPPER_LAYERS, CLI] }] } },
  { files: ['injector/notify.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [CLI] }] } },
  {
    // Tests, scripts and benchmarks talk to a terminal; product code logs through pino.
    files: ['test/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-console': 'off', 'max-lines-per-function': 'off', 'max-nested-callbacks': 'off', 'max-params': ['error', 6] },
  },
  // The example plugin's certificate helper mirrors openssl's arguments.
  { files: ['examples/**/*.ts'], rules: { 'max-params': ['error', 5] } },
);

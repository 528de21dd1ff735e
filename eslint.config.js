// ESLint flat config: typescript-eslint's recommended rules plus limits that keep
// functions and files small enough to read (complexity, nesting, length, parameters),
// and the layering of the code (docs/design.md, "Layers"): lower layers never import
// upper ones.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const UPPER_LAYERS = {
  group: ['**/injector/**', '**/webhook/**', '**/injector', '**/webhook'],
  message: 'src/ must not import the agent (injector/) or the webhook (webhook/): move what both need into src/.',
};
const CONSUMERS = {
  group: ['**/agent-config*', '**/controller/**', '**/templating/**'],
  message: 'the provider and ExternalSecret layers know no consumer: take a spec-shaped input instead.',
};
const EXTERNALSECRET = {
  group: ['**/externalsecret/**', '**/externalsecret'],
  message: 'src/providers is below src/externalsecret: move the shared piece into src/providers.',
};

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
    // src/ is the library both binaries share: it never imports the webhook or the agent.
    files: ['src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [UPPER_LAYERS] }] },
  },
  {
    // Providers and the ExternalSecret layer serve several consumers (agent, reconciler,
    // PushSecret): they know none of them, nor their configuration types.
    files: ['src/providers/**/*.ts', 'src/externalsecret/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [UPPER_LAYERS, CONSUMERS] }] },
  },
  {
    // The provider layer sits below the ExternalSecret layer that uses it.
    files: ['src/providers/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [UPPER_LAYERS, CONSUMERS, EXTERNALSECRET] }] },
  },
  {
    // Tests, scripts and benchmarks talk to a terminal; product code logs through pino.
    files: ['test/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-console': 'off', 'max-lines-per-function': 'off', 'max-nested-callbacks': 'off', 'max-params': ['error', 6] },
  },
  // The example plugin's certificate helper mirrors openssl's arguments.
  { files: ['examples/**/*.ts'], rules: { 'max-params': ['error', 5] } },
);

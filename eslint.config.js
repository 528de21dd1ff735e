// ESLint flat config: typescript-eslint's recommended rules plus limits that keep
// functions small enough to read (complexity, nesting, length).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
      'max-lines': ['warn', { max: 400, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['warn', { max: 80, skipBlankLines: true, skipComments: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  { files: ['**/*.js'], languageOptions: { globals: { process: 'readonly', console: 'readonly' } } },
  {
    // Tests, scripts and benchmarks talk to a terminal; product code logs through pino.
    files: ['test/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-console': 'off', 'max-lines-per-function': 'off', 'max-nested-callbacks': 'off' },
  },
);

// Heavy dependencies of the templating code, loaded on first use (synchronously, through
// require: they are CommonJS packages and every caller is synchronous). An agent whose
// configuration has no template never loads handlebars; one without toYaml or a
// templateFrom literal never loads yaml; one without ESO's certificate and PKCS#12 helpers
// never loads node-forge. Node caches the modules: each loads once.
// Handlebars comes from its single-file build (the same 4.x library, compiler included):
// `require('handlebars')` loads ~40 files and source-map (used only for the `srcName`
// compile option, which ESI never passes) and takes twice as long. The minified one of the
// two: V8 keeps a script's source in the heap for the life of the process, and the
// unminified file holds one non-ASCII character, so its 212 KB were 422 KiB of two-byte
// string; the minified file is 92 KB of ASCII (docs/performance/agent-startup.md).
import { createRequire } from 'node:module';
import type HandlebarsModule from 'handlebars';
import type * as YamlModule from 'yaml';
import type ForgeModule from 'node-forge';

const require = createRequire(import.meta.url);

let handlebars: typeof HandlebarsModule | undefined;
let yaml: typeof YamlModule | undefined;
let forge: typeof ForgeModule | undefined;

export function loadHandlebars(): typeof HandlebarsModule {
  return (handlebars ??= require('handlebars/dist/handlebars.min.js') as typeof HandlebarsModule);
}

export function loadYaml(): typeof YamlModule {
  return (yaml ??= require('yaml') as typeof YamlModule);
}

export function loadForge(): typeof ForgeModule {
  return (forge ??= require('node-forge') as typeof ForgeModule);
}

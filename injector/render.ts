// Stage 2: turn fetched values into the file set the writer publishes.
//   <name>/<key>   one file per key of each mounted ExternalSecret (after the
//                  ExternalSecret's own target.template, Go or handlebars, if any);
//   <name>/<key>   one file per key of each dynamic secret (docs/dynamic-secrets.md);
//   <file>         one file per `esi.dev/template-<file>` template.
// Every name is validated here (no "/", "..", or names the writer reserves) because keys
// come from remote stores (dataFrom.find) and must not escape the volume.
import type { AgentConfig } from '../src/agent-config/types.js';
import type { SecretMap } from '../src/providers/types.js';
import { applyExternalSecretTemplate, buildContext, type TemplateEngine } from '../src/templating/index.js';
import { fileNameProblem } from './config.js';

/** Relative path (`db/password`, `app.conf`) → content. */
export type FileSet = Map<string, Uint8Array>;

class RenderError extends Error {
  override name = 'RenderError';
}

const enc = new TextEncoder();

/** The annotation a template file came from, as users wrote it (used in errors). */
export function templateName(file: string): string {
  return `annotation esi.dev/template-${file}`;
}

/** Renders the complete file set, or throws (RenderError / TemplateError, value-free). */
export function renderFiles(config: AgentConfig, fetched: ReadonlyMap<string, SecretMap>, engine: TemplateEngine): FileSet {
  return renderOutputs(config, fetched, engine).files;
}

/** The file set and the rendered data of each secret (what the env file is built from). */
export function renderOutputs(config: AgentConfig, fetched: ReadonlyMap<string, SecretMap>, engine: TemplateEngine): { files: FileSet; scopes: Map<string, SecretMap> } {
  const files: FileSet = new Map();
  const scopes = new Map<string, SecretMap>();
  for (const secret of config.secrets) {
    const raw = fetched.get(secret.name);
    if (!raw) throw new RenderError(`ExternalSecret "${secret.name}": no data was fetched`);
    const data = applyExternalSecretTemplate(engine, { name: secret.name, template: secret.template, choice: secret.templateEngine ?? 'handlebars' }, raw);
    scopes.set(secret.name, data);
    // Fetched for environment variables only (esi.dev/env): no files.
    if (secret.files === false) continue;
    for (const [key, value] of Object.entries(data)) {
      const problem = fileNameProblem(key);
      if (problem) throw new RenderError(`ExternalSecret "${secret.name}": key "${key}" cannot be a file name: ${problem}`);
      files.set(`${secret.name}/${key}`, value);
    }
  }
  // Dynamic secrets (injector/leases.ts): their keys as they came from the store.
  for (const d of config.dynamicSecrets ?? []) {
    const data = fetched.get(d.name);
    if (!data) throw new RenderError(`dynamic secret "${d.name}": no credential was minted`);
    scopes.set(d.name, data);
    for (const [key, value] of Object.entries(data)) {
      const problem = fileNameProblem(key);
      if (problem) throw new RenderError(`dynamic secret "${d.name}": key "${key}" cannot be a file name: ${problem}`);
      files.set(`${d.name}/${key}`, value);
    }
  }
  if (config.templates.length > 0) {
    const context = buildContext(scopes);
    for (const t of config.templates) {
      const problem = fileNameProblem(t.file);
      if (problem) throw new RenderError(`${templateName(t.file)}: file name ${problem}`);
      if (scopes.has(t.file)) throw new RenderError(`${templateName(t.file)}: file name collides with ExternalSecret "${t.file}"`);
      files.set(t.file, enc.encode(engine.render(templateName(t.file), t.template, context)));
    }
  }
  return { files, scopes };
}

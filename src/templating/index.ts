// Public surface of ESI's templating: the handlebars engine, the context shape, the
// ExternalSecret `target.template` support and Go-template detection.
export { TemplateEngine, type CompiledTemplate, type TemplateContext } from './handlebars/engine.js';
export { TemplateError } from './errors.js';
export { HELPER_NAMES, HelperError } from './handlebars/helpers.js';
export { buildContext, secretScope } from './handlebars/context.js';
export { detectGoTemplate, type SourcePosition } from './handlebars/go-syntax.js';
export {
  applyExternalSecretTemplate,
  describeTemplates,
  renderExternalSecretTemplate,
  selectTemplateEngine,
  HANDLEBARS,
  TEMPLATE_ENGINE_ANNOTATION,
  type RenderedTemplate,
  type RenderOptions,
  type TemplateEngineChoice,
  type TemplateSources,
} from './eso.js';

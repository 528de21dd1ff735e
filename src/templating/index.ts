// Public surface of ESI's templating: the handlebars engine, the context shape, the
// ExternalSecret `target.template` support and Go-template detection.
export { TemplateEngine, type CompiledTemplate, type TemplateContext } from './engine.js';
export { TemplateError } from './errors.js';
export { HELPER_NAMES, HelperError } from './helpers.js';
export { buildContext, secretScope } from './context.js';
export { detectGoTemplate, type SourcePosition } from './go-syntax.js';
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
export { goFallbackKind, goTemplateStats, onGoTemplateFallback, type GoFallbackListener } from './go/index.js';

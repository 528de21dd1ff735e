// The Go template engine of the reconciler's main thread (src/templating/go/runner.ts): the
// spec checks parse Go templates here, PushSecrets render here, and a template the
// TypeScript engine declines goes to it. Starting it is tens of MiB and a second of CPU, so
// it starts with the first object that carries a template, not with the process
// (docs/controller.md, "Memory"), and without blocking the event loop: the reconcile of that
// object waits for it, as every reconcile once waited for it at start.
import type { ExternalSecret, PushSecret } from '../../api/types.js';
import { warmEngine } from '../../templating/go/runner.js';

let warming: Promise<void> | undefined;

const transforms = (entries: readonly { rewrite?: readonly { transform?: unknown }[] }[] | undefined) =>
  !!entries?.some((e) => e.rewrite?.some((r) => r.transform));

interface TemplateFields {
  target?: { template?: unknown };
  template?: unknown;
  dataFrom?: readonly { rewrite?: readonly { transform?: unknown }[] }[];
  dataTo?: readonly { rewrite?: readonly { transform?: unknown }[] }[];
}

/** Whether reconciling an ExternalSecret or PushSecret of this spec may parse or render a Go
 *  template (a template, a rewrite transform). */
export function carriesTemplate(spec: ExternalSecret['spec'] | PushSecret['spec'] | undefined): boolean {
  const s = spec as TemplateFields | undefined;
  return !!s && (!!s.target?.template || !!s.template || transforms(s.dataFrom) || transforms(s.dataTo));
}

/** Resolves once the engine has started (or failed to: the template's own check then says why). */
export function goEngineStarted(): Promise<void> {
  return (warming ??= warmEngine().catch(() => undefined));
}

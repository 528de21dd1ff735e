// The checks of one ExternalSecret that need no I/O, before anything is fetched: the store
// access rules, the spec checks the webhook applies too (one validator,
// src/externalsecret/checks.ts), the template engine and sources, ConfigMap targets and the
// refresh settings. All problems are gathered into one InvalidSpec Failure, so a user sees
// every field to fix at once.
import type { AnySecretStore, ExternalSecret } from '../../api/types.js';
import { externalSecretSpecProblems } from '../../externalsecret/checks.js';
import { TemplateSourceError } from '../../externalsecret/template-sources.js';
import { selectTemplateEngine } from '../../templating/index.js';
import type { ClientCache } from '../runtime/clients.js';
import { Failure } from './fetch.js';
import { checkStoreAccess } from './stores.js';
import type { Informers } from '../runtime/informers.js';
import { refreshSpec, type RefreshSpec } from './refresh.js';
import { templateSpecProblems } from './template-from.js';

export interface SpecCheckDeps {
  informers: Informers;
  clients: ClientCache;
  allowConfigMapTargets?: boolean;
}

/** Access rules and spec checks that need no I/O; throws Failure. */
export function checkSpec(es: ExternalSecret, stores: readonly AnySecretStore[], d: SpecCheckDeps): RefreshSpec {
  checkStoreAccess(es, stores, d);
  // The webhook refuses the same features when a pod mounts the ExternalSecret.
  const problems = externalSecretSpecProblems(es.spec, 'reconciler').map((p) => p.message);
  try {
    selectTemplateEngine(es.metadata.name!, es.metadata.annotations, es.spec.target?.template);
  } catch (err) {
    problems.push((err as Error).message.replace(/^ExternalSecret "[^"]*": /, ''));
  }
  problems.push(...templateProblems(es));
  const manifest = es.spec.target?.manifest;
  if (manifest?.kind === 'ConfigMap' && manifest.apiVersion === 'v1' && !d.allowConfigMapTargets) {
    problems.push('spec.target.manifest (ConfigMap) is not enabled in this controller: its operator starts it with --allow-configmap-targets (chart: controller.configMapTargets), off by default because values in a ConfigMap are not encrypted at rest and are readable by whoever may read ConfigMaps; remove it to get a Secret');
  }
  let refresh: RefreshSpec | undefined;
  try {
    refresh = refreshSpec(es);
  } catch (err) {
    problems.push((err as Error).message);
  }
  if (problems.length || !refresh) throw new Failure('InvalidSpec', `ExternalSecret "${es.metadata.name}": ${problems.join('; ')}`, false);
  return refresh;
}

/** The template sources' problems; a source in another namespace is an access refusal. */
function templateProblems(es: ExternalSecret): string[] {
  try {
    return templateSpecProblems(es);
  } catch (err) {
    if (err instanceof TemplateSourceError) throw new Failure('AccessDenied', `ExternalSecret "${es.metadata.name}": ${err.message}`, false);
    throw err;
  }
}

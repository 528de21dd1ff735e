// The target Secret's API calls: performing a plan of src/controller/externalsecret/secret.ts (which only
// decides) and reading the live Secret when the cache cannot answer (../runtime/informers.ts keeps data
// only of Secrets as ESI wrote them).
import type { V1Secret } from '@kubernetes/client-node';
import { resourcePath, SECRETS } from '../../kube/paths.js';
import { isKubeStatus, type KubeRest } from '../../kube/rest.js';
import type { Plan } from './secret.js';

/** Performs `plan` on Secret `ns/name`; true when the Secret was written. */
export async function applyPlan(rest: KubeRest, plan: Plan, ns: string, name: string): Promise<boolean> {
  const path = resourcePath(SECRETS, { namespace: ns });
  const named = resourcePath(SECRETS, { namespace: ns, name });
  switch (plan.action) {
    case 'none':
    case 'refuse':
      return false;
    case 'create':
      await rest.create(path, plan.body);
      return true;
    case 'replace':
      await rest.replace(named, plan.body);
      return true;
    case 'recreate':
      await rest.delete(named).catch((err: unknown) => {
        if (!isKubeStatus(err, 404)) throw err;
      });
      await rest.create(path, plan.body);
      return true;
  }
}

/** The live Secret, or undefined when there is none; other API errors are thrown. */
export async function readSecret(rest: KubeRest, ns: string, name: string): Promise<V1Secret | undefined> {
  try {
    return await rest.get<V1Secret>(resourcePath(SECRETS, { namespace: ns, name }));
  } catch (err) {
    if (isKubeStatus(err, 404)) return undefined;
    throw err;
  }
}

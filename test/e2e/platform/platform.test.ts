// The local control plane is what every integration test stands on: show that it is
// a real apiserver with RBAC on and the TokenRequest API working.
import { CoreV1Api, VersionApi } from '@kubernetes/client-node';
import t from 'tap';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { createNamespace, kubeConfigForToken, serviceAccountToken } from '../../support/kube.js';

const cp = await useControlPlane(t);

t.test('serves the pinned Kubernetes version', async (t) => {
  const v = await cp.kc.makeApiClient(VersionApi).getCode();
  const pinned = /KUBERNETES_VERSION=(\S+)/.exec(await import('node:fs').then((fs) => fs.readFileSync(new URL('../../platform/versions.env', import.meta.url), 'utf8')))![1];
  t.equal(v.gitVersion, pinned);
});

t.test('RBAC is enforced and TokenRequest works', async (t) => {
  const ns = await createNamespace(cp.kc, 'platform', t);
  const token = await serviceAccountToken(cp.kc, ns, 'default');
  t.match(token, /^ey/, 'a JWT was issued for the ServiceAccount');
  const asSa = kubeConfigForToken(cp.kc, token).makeApiClient(CoreV1Api);
  await t.rejects(asSa.listNamespacedSecret({ namespace: ns }), { code: 403 }, 'a ServiceAccount without a Role cannot list Secrets');
});

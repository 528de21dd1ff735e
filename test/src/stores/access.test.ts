// What a pod needs from a store (src/stores/access.ts): pod-identity audiences from the spec.
import t from 'tap';

t.test('pod-identity audiences come from the store spec', async (t) => {
  const { podIdentity } = await import('../../../src/stores/access.js');
  t.same(podIdentity({ vault: { server: 'https://v', auth: { jwt: { path: 'jwt', kubernetesServiceAccountToken: { serviceAccountRef: { name: 'app' }, audiences: ['vault.example'] } } } } }),
    { needed: true, audience: 'vault.example' }, 'vault jwt kubernetesServiceAccountToken.audiences');
  t.same(podIdentity({ gcpsm: { projectID: 'p1', auth: { workloadIdentity: { clusterLocation: 'x', clusterName: 'c', serviceAccountRef: { name: 'app' } } } } }),
    { needed: true, audience: 'p1.svc.id.goog' }, 'GKE workload identity');
  t.same(podIdentity({ kubernetes: { auth: { serviceAccount: { name: 'app' } } } }), { needed: true, audience: '' }, 'the Kubernetes API default');
  t.same(podIdentity({ fake: { data: [] } }), { needed: false, audience: undefined });
});

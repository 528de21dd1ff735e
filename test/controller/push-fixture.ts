// Shared set-up of the PushSecret tests: PushSecret objects (v1alpha1), their Ready
// condition, and a `kubernetes` store whose remote side is another namespace of the same
// real control plane, written as a ServiceAccount with a Role there (read back as admin), and
// one on moto's Secrets Manager.
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { startMoto, useMotoEndpoint, type MotoServer } from '../platform/backends/moto.js';
import type { PushSecret } from '../../src/api/types.js';
import { createNamespace, serviceAccountToken } from '../helpers/kube.js';
import { GROUP, until, type Env } from './fixture.js';

type T = { teardown(fn: () => unknown): void };

export async function createPush(env: Env, ns: string, name: string, spec: object, meta: object = {}): Promise<void> {
  await env.custom.createNamespacedCustomObject({
    group: GROUP, version: 'v1alpha1', namespace: ns, plural: 'pushsecrets',
    body: { apiVersion: `${GROUP}/v1alpha1`, kind: 'PushSecret', metadata: { name, ...meta }, spec: { refreshInterval: '2s', ...spec } },
  });
}

export async function getPush(env: Env, ns: string, name: string): Promise<PushSecret | undefined> {
  try {
    return (await env.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1alpha1', namespace: ns, plural: 'pushsecrets', name })) as PushSecret;
  } catch {
    return undefined;
  }
}

export async function patchPush(env: Env, ns: string, name: string, mutate: (o: PushSecret) => void): Promise<void> {
  for (let i = 0; ; i++) {
    const cur = (await getPush(env, ns, name))!;
    mutate(cur);
    try {
      await env.custom.replaceNamespacedCustomObject({ group: GROUP, version: 'v1alpha1', namespace: ns, plural: 'pushsecrets', name, body: cur });
      return;
    } catch (err) {
      if (i > 5 || (err as { code?: number }).code !== 409) throw err;
    }
  }
}

export async function deletePush(env: Env, ns: string, name: string): Promise<void> {
  await env.custom.deleteNamespacedCustomObject({ group: GROUP, version: 'v1alpha1', namespace: ns, plural: 'pushsecrets', name });
}

/** The PushSecret once Ready has `status` (and `reason`); a message pattern narrows it. */
export function pushReady(env: Env, ns: string, name: string, status: 'True' | 'False', reason?: string, opts: { message?: RegExp; ms?: number } = {}): Promise<PushSecret> {
  const { message, ms } = opts;
  return until(`PushSecret ${ns}/${name} Ready=${status}${reason ? ` (${reason})` : ''}${message ? ` ${message}` : ''}`, async () => {
    const ps = await getPush(env, ns, name);
    const c = ps?.status?.conditions?.find((x) => x.type === 'Ready');
    return c?.status === status && (!reason || c.reason === reason) && (!message || message.test(c.message ?? '')) ? ps : undefined;
  }, ms ?? 60_000);
}

export async function putSecret(env: Env, ns: string, name: string, data: Record<string, string>, labels?: Record<string, string>): Promise<void> {
  const body = { metadata: { name, namespace: ns, labels }, stringData: data };
  try {
    await env.core.createNamespacedSecret({ namespace: ns, body });
  } catch {
    await env.core.replaceNamespacedSecret({ namespace: ns, name, body });
  }
}

/** A `kubernetes` SecretStore in `ns` writing into a fresh namespace (returned) as a
 *  ServiceAccount allowed to manage Secrets there. */
export async function kubernetesStore(env: Env, t: T, ns: string, name: string, labels?: Record<string, string>): Promise<{ store: object; remote: string }> {
  const remote = await createNamespace(env.kc, 'push-remote', t);
  const sa = 'pusher';
  await env.core.createNamespacedServiceAccount({ namespace: remote, body: { metadata: { name: sa } } });
  const rbac = env.kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({ namespace: remote, body: { metadata: { name: sa }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'update', 'delete', 'patch'] }] } });
  await rbac.createNamespacedRoleBinding({ namespace: remote, body: {
    metadata: { name: sa }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: sa },
    subjects: [{ kind: 'ServiceAccount', name: sa, namespace: remote }],
  } });
  const token = await serviceAccountToken(env.kc, remote, sa);
  await putSecret(env, ns, `${name}-token`, { token });
  const caBundle = Buffer.from(env.cp.caPem).toString('base64');
  const store = {
    kind: 'SecretStore', metadata: { name, labels },
    spec: { controller: env.cls, provider: { kubernetes: { remoteNamespace: remote, server: { url: env.cp.server, caBundle }, auth: { token: { bearerToken: { name: `${name}-token`, key: 'token' } } } } } },
  };
  return { store, remote };
}

/** A moto server for this test file, a SecretStore `name` in `ns` on its Secrets Manager
 *  (static keys in the Secret `<name>-creds`; not created, as kubernetesStore), and an SDK
 *  client that reads the remote side back as the test. */
export async function motoSecretsManagerStore(env: Env, t: T, ns: string, name = 'aws'): Promise<{ moto: MotoServer; sm: SecretsManagerClient; store: { kind: string; metadata: { name: string }; spec: object } }> {
  const moto = await startMoto(t);
  useMotoEndpoint(t, moto); // inherited by the controller the test starts
  const sm = new SecretsManagerClient({ region: moto.region, endpoint: moto.endpoint, credentials: { accessKeyId: 'seed', secretAccessKey: 'seed' } });
  t.teardown(() => sm.destroy());
  await putSecret(env, ns, `${name}-creds`, { 'aws-id': 'AKIAPUSHTEST', 'aws-secret': 'push-test-secret' });
  const creds = `${name}-creds`;
  const store = {
    kind: 'SecretStore', metadata: { name },
    spec: { controller: env.cls, provider: { aws: {
      service: 'SecretsManager', region: moto.region, secretsManager: { forceDeleteWithoutRecovery: true },
      auth: { secretRef: { accessKeyIDSecretRef: { name: creds, key: 'aws-id' }, secretAccessKeySecretRef: { name: creds, key: 'aws-secret' } } },
    } } },
  };
  return { moto, sm, store };
}

export async function remoteData(env: Env, ns: string, name: string): Promise<Record<string, string> | undefined> {
  try {
    const s = await env.core.readNamespacedSecret({ namespace: ns, name });
    return Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
  } catch {
    return undefined;
  }
}

// The equivalent pods both webhooks admit: the same ~8 KB application pod, opted in with
// each injector's own annotations for the same request: 3 secrets mounted as files plus
// one templated file built from them.
//   ESI:       label esi.dev/inject, esi.dev/secrets: 3 ExternalSecrets, esi.dev/template-app.conf
//   vault-k8s: vault.hashicorp.com/agent-inject, a role, agent-inject-secret-<name> for the
//              3 secrets, agent-inject-secret-/agent-inject-template-app.conf for the template
import type { V1Pod } from '@kubernetes/client-node';
import { randomUUID } from 'node:crypto';
import type { AdmissionReview } from '../../webhook/server.js';
import type { LoadRequest } from '../lib/load.js';

/** A namespace of bench/admission/cluster.ts (its ExternalSecrets all resolve). */
export const NAMESPACE = 'payments-prod';
export const SERVICE_ACCOUNT = 'workload';
/** ExternalSecrets of that namespace (bench/admission/cluster.ts ES_NAMES). */
export const SECRETS = ['db', 'api-keys', 'tls'] as const;

function appPod(): V1Pod {
  const env = Array.from({ length: 60 }, (_, i) => ({
    name: `APP_SETTING_${i}`,
    value: i % 3 === 0 ? `https://payments-${i}.payments-prod.svc.cluster.local:8443/v1/endpoint-${i}` : String(1000 + i * 37),
  }));
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      generateName: 'payments-api-7d9f8c6b5-', namespace: NAMESPACE,
      labels: { app: 'payments-api', 'pod-template-hash': '7d9f8c6b5', 'app.kubernetes.io/part-of': 'payments' },
      annotations: { 'kubectl.kubernetes.io/default-container': 'app' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'payments-api-7d9f8c6b5', uid: '6f1b2c9e-0d7a-4e43-9a51-3c2b8d0e4f11', controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      serviceAccountName: SERVICE_ACCOUNT,
      containers: [{
        name: 'app', image: 'registry.example.com/payments/api:1.42.0@sha256:3b1c4f0e9d2a7b6c5e8f1a0d3c2b4e6f8a9d0c1b2e3f4a5b6c7d8e9f0a1b2c3d',
        args: ['--config=/etc/app/config.yaml', '--listen=:8080'],
        ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }, { name: 'metrics', containerPort: 9090, protocol: 'TCP' }],
        env,
        resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '512Mi' } },
        readinessProbe: { httpGet: { path: '/readyz', port: 8080 as never }, periodSeconds: 5 },
        livenessProbe: { httpGet: { path: '/healthz', port: 8080 as never }, periodSeconds: 10 },
        securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } },
        volumeMounts: [{ name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }],
      }],
      volumes: [{
        name: 'kube-api-access',
        projected: { defaultMode: 420, sources: [
          { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
        ] },
      }],
    },
  };
}

export type Injector = 'esi' | 'vault-k8s';

const ESI_TEMPLATE = 'db_user={{[db].username}}\napi_token={{[api-keys].token}}\ntls_cert={{[tls].certificate}}\n';
const VAULT_TEMPLATE = [
  '{{- with secret "secret/data/payments/db" }}db_user={{ .Data.data.username }}{{ end }}',
  '{{- with secret "secret/data/payments/api-keys" }}api_token={{ .Data.data.token }}{{ end }}',
  '{{- with secret "secret/data/payments/tls" }}tls_cert={{ .Data.data.certificate }}{{ end }}',
].join('\n');

/** The pod, opted in to `injector` for 3 secrets + 1 template. */
export function podFor(injector: Injector): V1Pod {
  const pod = appPod();
  const ann = pod.metadata!.annotations!;
  if (injector === 'esi') {
    pod.metadata!.labels!['esi.dev/inject'] = 'true';
    ann['esi.dev/secrets'] = SECRETS.join(',');
    ann['esi.dev/template-app.conf'] = ESI_TEMPLATE;
  } else {
    ann['vault.hashicorp.com/agent-inject'] = 'true';
    ann['vault.hashicorp.com/role'] = 'payments-api';
    for (const s of SECRETS) ann[`vault.hashicorp.com/agent-inject-secret-${s}`] = `secret/data/payments/${s}`;
    ann['vault.hashicorp.com/agent-inject-secret-app.conf'] = 'secret/data/payments/db';
    ann['vault.hashicorp.com/agent-inject-template-app.conf'] = VAULT_TEMPLATE;
  }
  return pod;
}

/** The AdmissionReview bytes for `injector`, with `UID` as a fixed-width placeholder. */
function reviewTemplate(injector: Injector): { head: Buffer; tail: Buffer } {
  const review: AdmissionReview = {
    apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview',
    request: {
      uid: '@UID@', kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE', namespace: NAMESPACE, object: podFor(injector),
    },
  };
  // The apiserver also sends these; both webhooks ignore them but parse them.
  Object.assign(review.request!, {
    resource: { group: '', version: 'v1', resource: 'pods' }, requestKind: { group: '', version: 'v1', kind: 'Pod' },
    requestResource: { group: '', version: 'v1', resource: 'pods' },
    userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller', uid: 'f3c3d6a4-4b0b-4c59-9b0e-000000000001', groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system', 'system:authenticated'] },
    options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' }, dryRun: false,
  });
  const [head, tail] = JSON.stringify(review).split('@UID@');
  return { head: Buffer.from(head!), tail: Buffer.from(tail!) };
}

/** Size in bytes of one review for `injector`. */
export function reviewSize(injector: Injector): number {
  const { head, tail } = reviewTemplate(injector);
  return head.length + 36 + tail.length;
}

/** Requests with a fresh uid each; an answer is right when it allows the pod with a patch
 *  for that uid that adds the injector's containers. */
export function requestSource(injector: Injector): () => LoadRequest {
  const { head, tail } = reviewTemplate(injector);
  const marker = injector === 'esi' ? 'esi-agent' : 'vault-agent';
  return () => {
    const uid = randomUUID();
    return {
      body: Buffer.concat([head, Buffer.from(uid), tail]),
      check(_status, body) {
        const answer = JSON.parse(body.toString('utf8')) as { response?: { uid?: string; allowed?: boolean; patch?: string; status?: { message?: string } } };
        const r = answer.response;
        if (r?.uid !== uid) return `uid ${r?.uid} for ${uid}`;
        if (!r.allowed) return `denied: ${r.status?.message ?? '?'}`;
        if (!r.patch) return 'no patch';
        if (!Buffer.from(r.patch, 'base64').toString('utf8').includes(marker)) return `the patch adds no ${marker} container`;
        return undefined;
      },
    };
  };
}

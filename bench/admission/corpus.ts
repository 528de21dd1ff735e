// The benchmark's AdmissionReviews: realistic pod shapes, generated from a fixed seed over
// the cluster of cluster.ts. `tsx bench/admission/corpus.ts --out DIR` writes them as JSON
// files for inspection (the benchmark itself regenerates them in memory, identically).
import type { V1Container, V1EnvVar, V1Pod, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { admit } from '../../webhook/admission.js';
import type { AgentSettings } from '../../webhook/mutate.js';
import type { AdmissionReview } from '../../webhook/server.js';
import { Rng } from '../lib/rng.js';
import { buildCluster, ENVS, ES_NAMES, FORBIDDEN_ES, IndexedLookup, TEAMS, WORKLOAD_SA } from './cluster.js';

export type Shape = 'small' | 'deployment' | 'job' | 'mesh' | 'many-secrets' | 'legacy-sidecar' | 'unlabelled' | 'deny-missing' | 'deny-condition' | 'adversarial';
export type Expect = 'inject' | 'skip' | 'deny';

export interface CorpusEntry {
  id: string;
  shape: Shape;
  expect: Expect;
  /** The ExternalSecrets the pod asks for (checked against the injected agent config). */
  secrets: string[];
  review: AdmissionReview & { request: NonNullable<AdmissionReview['request']> };
}

/** Share of each shape in the corpus (and so in the traffic, which cycles through it). */
export const MIX: Record<Shape, number> = {
  small: 22, deployment: 25, job: 10, mesh: 10, 'many-secrets': 10, 'legacy-sidecar': 5, unlabelled: 8, 'deny-missing': 6, 'deny-condition': 4,
  // The most expensive pod admission accepts (SECURITY.md): templates at the per-pod limit,
  // densest valid syntax. Its max is compared with the p99 of the other shapes.
  adversarial: 1,
};

const EXPECT: Record<Shape, Expect> = {
  small: 'inject', deployment: 'inject', job: 'inject', mesh: 'inject', 'many-secrets': 'inject', 'legacy-sidecar': 'inject',
  unlabelled: 'skip', 'deny-missing': 'deny', 'deny-condition': 'deny', adversarial: 'inject',
};

/** ExternalSecrets per shape: 1, 3 or 10 (denials add one that cannot resolve). */
const SECRET_COUNT: Record<Shape, number> = {
  small: 1, deployment: 3, job: 1, mesh: 3, 'many-secrets': 10, 'legacy-sidecar': 3, unlabelled: 0, 'deny-missing': 2, 'deny-condition': 2, adversarial: 3,
};

/** A template of `length` characters of the densest syntax the check accepts: every
 *  expression at the parts limit, nested sub-expressions, blocks at depth. */
function adversarialTemplate(a: string, length: number): string {
  const args = Array.from({ length: 15 }, (_, i) => `[${a}].k${i}`).join(' ');
  const unit = `{{#if [${a}].x}}{{#each [${a}]}}{{join "," ${args} (concat (upper (lower (trim "x"))))}}{{/each}}{{/if}}\n`;
  return unit.repeat(Math.floor(length / unit.length));
}

function envVars(rng: Rng, n: number, app: string): V1EnvVar[] {
  const env: V1EnvVar[] = [
    { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
    { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } } },
    { name: 'NODE_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.hostIP' } } },
    { name: 'GOMEMLIMIT', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1' } } },
    { name: 'LOG_LEVEL', valueFrom: { configMapKeyRef: { name: `${app}-config`, key: 'log-level' } } },
  ];
  const words = ['CACHE', 'HTTP', 'GRPC', 'DB', 'QUEUE', 'FEATURE', 'OTEL', 'RATE', 'RETRY', 'TIMEOUT', 'POOL', 'TLS'];
  for (let i = env.length; i < n; i++) {
    const name = `${rng.pick(words)}_${rng.pick(words)}_${i}`;
    env.push({ name, value: rng.chance(0.3) ? `https://${app}-${rng.hex(4)}.svc.cluster.local:${rng.int(1024, 9999)}/v1/${rng.hex(12)}` : String(rng.int(1, 100000)) });
  }
  return env;
}

function appContainer(rng: Rng, name: string, app: string, opts: { env: number; mounts: V1VolumeMount[]; port?: number }): V1Container {
  const port = opts.port ?? 8080;
  return {
    name, image: `registry.example.com/${app}/${name}:1.${rng.int(0, 40)}.${rng.int(0, 9)}@sha256:${rng.hex(64)}`,
    imagePullPolicy: 'IfNotPresent', args: ['--config=/etc/app/config.yaml', `--listen=:${port}`],
    ports: [{ name: 'http', containerPort: port, protocol: 'TCP' }, { name: 'metrics', containerPort: 9090, protocol: 'TCP' }],
    env: envVars(rng, opts.env, app),
    envFrom: [{ configMapRef: { name: `${app}-env` } }],
    resources: { requests: { cpu: `${rng.int(1, 10) * 50}m`, memory: `${rng.int(1, 16) * 64}Mi` }, limits: { memory: `${rng.int(8, 32) * 64}Mi` } },
    readinessProbe: { httpGet: { path: '/readyz', port: 'http' as never, scheme: 'HTTP' }, periodSeconds: 5, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 },
    livenessProbe: { httpGet: { path: '/healthz', port: 'http' as never, scheme: 'HTTP' }, initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 },
    securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } },
    terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File',
    volumeMounts: [...opts.mounts, { name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }],
  };
}

function apiAccessVolume(): V1Volume {
  return {
    name: 'kube-api-access',
    projected: {
      defaultMode: 420,
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
      ],
    },
  };
}

function volumes(rng: Rng, app: string, n: number): { volumes: V1Volume[]; mounts: V1VolumeMount[] } {
  const vols: V1Volume[] = [apiAccessVolume()];
  const mounts: V1VolumeMount[] = [];
  for (let i = 0; i < n; i++) {
    const kind = rng.pick(['configMap', 'secret', 'emptyDir', 'pvc'] as const);
    const name = `${kind.toLowerCase()}-${i}`;
    if (kind === 'configMap') vols.push({ name, configMap: { name: `${app}-${name}`, defaultMode: 420 } });
    if (kind === 'secret') vols.push({ name, secret: { secretName: `${app}-${name}`, defaultMode: 288 } });
    if (kind === 'emptyDir') vols.push({ name, emptyDir: { sizeLimit: '256Mi' } });
    if (kind === 'pvc') vols.push({ name, persistentVolumeClaim: { claimName: `${app}-data-${i}` } });
    mounts.push({ name, mountPath: `/srv/${name}`, readOnly: kind !== 'emptyDir' });
  }
  return { volumes: vols, mounts };
}

function annotationsFor(rng: Rng, shape: Shape, secrets: string[]): Record<string, string> {
  const ann: Record<string, string> = { 'kubectl.kubernetes.io/default-container': 'app' };
  if (secrets.length) ann['esi.dev/secrets'] = secrets.join(',');
  if (shape === 'job') ann['esi.dev/mode'] = rng.pick(['init-only', 'native-sidecar']);
  if (shape === 'legacy-sidecar') ann['esi.dev/mode'] = 'sidecar';
  if (shape === 'deployment' || shape === 'many-secrets' || shape === 'mesh') {
    const [a, b] = [secrets[0]!, secrets[1] ?? secrets[0]!];
    ann['esi.dev/template-app.env'] = `DATABASE_URL=postgres://{{[${a}].username}}:{{[${a}].password}}@db:5432/app\nAPI_TOKEN={{[${b}].token}}\n`;
    ann['esi.dev/template-config.yaml'] = `auth:\n  clientId: "{{[${b}].client-id}}"\n  clientSecret: "{{[${b}].client-secret}}"\n{{#if [${a}].host}}db: {{[${a}].host}}{{/if}}\n`;
    ann['esi.dev/refresh-interval'] = rng.pick(['5m', '15m', '1h']);
    ann['esi.dev/on-change'] = 'http://127.0.0.1:8080/-/reload';
  }
  if (shape === 'deployment') ann['esi.dev/containers'] = 'app,worker';
  if (shape === 'adversarial') {
    // Two templates at the per-template limit fill the per-pod limit (src/pod-contract/parse.ts).
    ann['esi.dev/template-a.conf'] = adversarialTemplate(secrets[0]!, 32 * 1024 - 64);
    ann['esi.dev/template-b.conf'] = adversarialTemplate(secrets[1]!, 32 * 1024 - 64);
  }
  if (shape === 'mesh') {
    Object.assign(ann, {
      'sidecar.istio.io/status': `{"initContainers":["istio-init","istio-proxy"],"containers":null,"volumes":["workload-socket","istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert"],"revision":"default"}`,
      'prometheus.io/scrape': 'true', 'prometheus.io/port': '15020', 'prometheus.io/path': '/stats/prometheus',
      'kubectl.kubernetes.io/default-logs-container': 'app',
    });
  }
  return ann;
}

function meshContainers(rng: Rng): { inits: V1Container[]; volumes: V1Volume[] } {
  const proxyImage = `docker.io/istio/proxyv2:1.2${rng.int(2, 4)}.${rng.int(0, 5)}`;
  const inits: V1Container[] = [
    { name: 'istio-init', image: proxyImage, args: ['istio-iptables', '-p', '15001', '-z', '15006', '-u', '1337', '-m', 'REDIRECT', '-i', '*', '-x', '', '-b', '*', '-d', '15090,15021,15020'],
      resources: { requests: { cpu: '10m', memory: '40Mi' }, limits: { cpu: '2', memory: '1Gi' } },
      securityContext: { allowPrivilegeEscalation: false, capabilities: { add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL'] }, runAsNonRoot: false, runAsUser: 0 } },
    { name: 'istio-proxy', image: proxyImage, restartPolicy: 'Always', args: ['proxy', 'sidecar', '--domain', '$(POD_NAMESPACE).svc.cluster.local', '--proxyLogLevel=warning', '--log_output_level=default:info'],
      ports: [{ name: 'http-envoy-prom', containerPort: 15090, protocol: 'TCP' }],
      env: ['PILOT_CERT_PROVIDER', 'CA_ADDR', 'POD_NAME', 'POD_NAMESPACE', 'INSTANCE_IP', 'SERVICE_ACCOUNT', 'HOST_IP', 'ISTIO_CPU_LIMIT', 'PROXY_CONFIG', 'ISTIO_META_POD_PORTS', 'ISTIO_META_APP_CONTAINERS', 'ISTIO_META_CLUSTER_ID', 'ISTIO_META_INTERCEPTION_MODE', 'ISTIO_META_WORKLOAD_NAME', 'ISTIO_META_OWNER', 'ISTIO_META_MESH_ID', 'TRUST_DOMAIN']
        .map((name) => ({ name, value: `${name.toLowerCase()}-${rng.hex(8)}` })),
      readinessProbe: { httpGet: { path: '/healthz/ready', port: 15021 as never }, periodSeconds: 15, timeoutSeconds: 3, failureThreshold: 4 },
      startupProbe: { httpGet: { path: '/healthz/ready', port: 15021 as never }, periodSeconds: 1, timeoutSeconds: 3, failureThreshold: 600 },
      resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '2', memory: '1Gi' } },
      securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true, runAsGroup: 1337, runAsNonRoot: true, runAsUser: 1337 },
      volumeMounts: ['workload-socket', 'credential-socket', 'workload-certs', 'istiod-ca-cert', 'istio-data', 'istio-envoy', 'istio-token', 'istio-podinfo']
        .map((name) => ({ name, mountPath: `/var/run/istio/${name}` })) },
  ];
  const volumes: V1Volume[] = [
    { name: 'workload-socket', emptyDir: {} }, { name: 'credential-socket', emptyDir: {} }, { name: 'workload-certs', emptyDir: {} },
    { name: 'istio-envoy', emptyDir: { medium: 'Memory' } }, { name: 'istio-data', emptyDir: {} },
    { name: 'istio-podinfo', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }, { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } }] } },
    { name: 'istio-token', projected: { sources: [{ serviceAccountToken: { audience: 'istio-ca', expirationSeconds: 43200, path: 'istio-token' } }] } },
    { name: 'istiod-ca-cert', configMap: { name: 'istio-ca-root-cert' } },
  ];
  return { inits, volumes };
}

interface PodPlan {
  app: string;
  containers: V1Container[];
  initContainers: V1Container[];
  volumes: V1Volume[];
  job: boolean;
}

function planPod(rng: Rng, shape: Shape, app: string): PodPlan {
  const big = shape === 'deployment' || shape === 'many-secrets';
  const v = volumes(rng, app, big ? rng.int(10, 16) : rng.int(1, 3));
  const main = appContainer(rng, 'app', app, { env: big ? rng.int(40, 60) : rng.int(5, 12), mounts: v.mounts });
  const plan: PodPlan = { app, containers: [main], initContainers: [], volumes: v.volumes, job: shape === 'job' };
  if (big) {
    plan.containers.push(appContainer(rng, 'worker', app, { env: rng.int(30, 45), mounts: v.mounts.slice(0, 4), port: 8081 }));
    plan.containers.push(appContainer(rng, 'log-shipper', app, { env: rng.int(8, 15), mounts: v.mounts.slice(0, 1), port: 2020 }));
    plan.initContainers.push(appContainer(rng, 'migrate', app, { env: rng.int(10, 20), mounts: v.mounts.slice(0, 2) }));
    plan.initContainers.push(appContainer(rng, 'wait-for-db', app, { env: 3, mounts: [] }));
  }
  if (shape === 'mesh') {
    const mesh = meshContainers(rng);
    plan.initContainers.push(...mesh.inits);
    plan.volumes.push(...mesh.volumes);
  }
  return plan;
}

function podFor(rng: Rng, shape: Shape, ns: string, secrets: string[]): V1Pod {
  const app = `${rng.pick(['api', 'web', 'worker', 'gateway', 'indexer', 'consumer', 'scheduler'])}-${rng.hex(3)}`;
  const plan = planPod(rng, shape, app);
  const hash = rng.hex(10);
  const owner = plan.job
    ? { apiVersion: 'batch/v1', kind: 'Job', name: `${app}-29${rng.int(100000, 999999)}`, uid: rng.uuid(), controller: true, blockOwnerDeletion: true }
    : { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${app}-${hash}`, uid: rng.uuid(), controller: true, blockOwnerDeletion: true };
  const labels: Record<string, string> = { app, 'app.kubernetes.io/name': app, 'app.kubernetes.io/version': `1.${rng.int(0, 40)}.0`, 'pod-template-hash': hash };
  if (shape !== 'unlabelled') labels['esi.dev/inject'] = 'true';
  if (plan.job) Object.assign(labels, { 'batch.kubernetes.io/job-name': owner.name, 'batch.kubernetes.io/controller-uid': owner.uid });
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { generateName: `${owner.name}-`, namespace: ns, labels, annotations: annotationsFor(rng, shape, secrets), ownerReferences: [owner] },
    spec: {
      serviceAccountName: WORKLOAD_SA, automountServiceAccountToken: true, enableServiceLinks: false,
      restartPolicy: plan.job ? 'Never' : 'Always', terminationGracePeriodSeconds: 30, dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler', priority: 0, preemptionPolicy: 'PreemptLowerPriority',
      securityContext: { runAsNonRoot: true, fsGroup: 2000, seccompProfile: { type: 'RuntimeDefault' } },
      ...(plan.initContainers.length ? { initContainers: plan.initContainers } : {}),
      containers: plan.containers, volumes: plan.volumes,
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
      topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { app } } }],
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'node.kubernetes.io/pool', operator: 'In', values: ['general', 'general-arm'] }] }] } } },
    },
  };
}

function secretsFor(rng: Rng, shape: Shape): string[] {
  const n = SECRET_COUNT[shape];
  if (shape === 'deny-missing') return [...rng.sample(ES_NAMES, n - 1), `${rng.pick(ES_NAMES)}-v${rng.int(2, 9)}`];
  if (shape === 'deny-condition') return [...rng.sample(ES_NAMES, n - 1), FORBIDDEN_ES];
  return rng.sample(ES_NAMES, n);
}

function entry(rng: Rng, index: number, shape: Shape): CorpusEntry {
  const ns = `${rng.pick(TEAMS)}-${rng.pick(ENVS)}`;
  const secrets = secretsFor(rng, shape);
  const uid = rng.uuid();
  const controller = shape === 'job' ? 'job-controller' : 'replicaset-controller';
  return {
    id: `${String(index).padStart(4, '0')}-${shape}`, shape, expect: EXPECT[shape], secrets,
    review: {
      apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview',
      request: {
        uid, kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE', namespace: ns, dryRun: false,
        object: podFor(rng, shape, ns, secrets),
        ...{
          resource: { group: '', version: 'v1', resource: 'pods' },
          requestKind: { group: '', version: 'v1', kind: 'Pod' },
          requestResource: { group: '', version: 'v1', resource: 'pods' },
          userInfo: { username: `system:serviceaccount:kube-system:${controller}`, uid: rng.uuid(), groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system', 'system:authenticated'] },
          oldObject: null,
          options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
        },
      },
    },
  };
}

/** `size` reviews with the shares of MIX (rounded), in a seeded random order. */
export function buildCorpus(size = 400, seed = 42): CorpusEntry[] {
  const rng = new Rng(seed);
  const total = Object.values(MIX).reduce((a, b) => a + b, 0);
  const shapes = (Object.entries(MIX) as [Shape, number][]).flatMap(([s, w]) => Array<Shape>(Math.max(1, Math.round((size * w) / total))).fill(s));
  return rng.shuffle(shapes).map((shape, i) => entry(rng, i, shape));
}

export const BENCH_AGENT: AgentSettings = { image: 'ghcr.io/esi-dev/esi:0.1.0', imagePullPolicy: 'IfNotPresent', defaultTokenAudience: 'esi' };

/** Runs admit() over the corpus in-process: every entry must get the answer its shape
 *  expects, or the benchmark would measure denials (e.g. after an admission rule changed). */
export function preflight(corpus: CorpusEntry[]): string[] {
  const lookup = new IndexedLookup(buildCluster());
  const kind: Record<Expect, string> = { inject: 'mutated', skip: 'skipped', deny: 'denied' };
  const problems: string[] = [];
  for (const e of corpus) {
    const out = admit(e.review.request.object!, { namespace: e.review.request.namespace!, lookup, resolve: {}, agent: BENCH_AGENT });
    if (out.kind !== kind[e.expect]) problems.push(`${e.id}: expected ${kind[e.expect]}, got ${out.kind}${out.kind === 'denied' ? `: ${out.message}` : ''}`);
  }
  return problems;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: 'bench/admission/.corpus' }, size: { type: 'string', default: '400' } } });
  const corpus = buildCorpus(Number(values.size));
  const problems = preflight(corpus);
  for (const p of problems) console.error(p);
  mkdirSync(values.out!, { recursive: true });
  for (const e of corpus) writeFileSync(join(values.out!, `${e.id}.json`), `${JSON.stringify(e.review, null, 2)}\n`);
  console.log(`wrote ${corpus.length} AdmissionReviews to ${values.out}; ${problems.length} not answered as their shape expects`);
  process.exitCode = problems.length ? 1 : 0;
}

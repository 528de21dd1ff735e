// The pod mutation: a pure function (pod, resolved inputs) → new pod. The admission
// patch is the diff between the two (see admission.ts). Nothing here does I/O.
import type { V1Container, V1Pod, V1PodSpec, V1SecurityContext, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { AGENT_CONFIG_ENV, AGENT_CONFIG_VERSION, type AgentConfig, type AgentStore, type InjectionMode } from '../src/agent-config/types.js';
import { AGENT_CONTAINER, AGENT_INIT_CONTAINER, INJECTED_ANNOTATION, type InjectionRequest } from '../src/pod-contract/annotations.js';
import type { Resolved, ResolvedStore } from './resolve.js';
import { quantityValue } from '../src/pod-contract/values.js';
import { agentEnv, envAgentMount, envVolume, withEnvRefs } from '../src/pod-contract/env.js';
import { CHANNEL_DIR, CHANNEL_VOLUME, channelItems } from '../src/pod-contract/channel.js';

export { AGENT_CONTAINER, AGENT_INIT_CONTAINER };
export const SECRETS_VOLUME = 'esi-secrets';
export const TOKENS_VOLUME = 'esi-tokens';
const TOKENS_DIR = '/var/run/esi/tokens';
export const CREDENTIALS_DIR = '/var/run/esi/credentials';
const CONFIGMAPS_DIR = '/var/run/esi/configmaps';
/** The agent's default user and group (the agent image's USER): non-root, fixed so file
 *  modes are predictable. `AgentSettings.runAsUser` overrides it. */
export const AGENT_UID = 65532;

/** --agent-run-as-user: a non-root UID, or "auto" (left to the platform or the pod). */
export function parseRunAsUser(raw: string): number | 'auto' {
  if (raw === 'auto') return 'auto';
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > 2 ** 31 - 1) {
    throw new Error(`--agent-run-as-user "${raw}": expected a non-root UID (1 to 2147483647) or "auto"`);
  }
  return n;
}

export interface AgentSettings {
  image: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** Token audience for stores that need pod identity and name no audience. */
  defaultTokenAudience: string;
  tokenExpirationSeconds?: number;
  /** Operator-set, non-secret environment for every agent (e.g. a provider endpoint or an
   *  extra CA file path); tenants cannot set it. */
  env?: Record<string, string>;
  /** The agent's runAsUser and runAsGroup (default AGENT_UID). 'auto' sets neither: the
   *  platform assigns them (OpenShift's restricted-v2 SCC, a UID from the namespace's
   *  range) or the pod's own securityContext does; runAsNonRoot stays true either way
   *  (docs/install.md, "The injected agent: Pod Security and OpenShift"). */
  runAsUser?: number | 'auto';
  /** Chart-wide defaults of the agent's resources (`esi webhook --agent-cpu-request` …,
   *  the chart's agent.resources); a pod's esi.dev/agent-* annotations win over them. */
  resources?: AgentResources;
}

export interface AgentResources { cpuRequest?: string; memoryRequest?: string; memoryLimit?: string }

/** The annotation of each resource a pod may set itself. */
const RESOURCE_ANNOTATIONS = {
  cpuRequest: 'esi.dev/agent-cpu-request', memoryRequest: 'esi.dev/agent-memory-request', memoryLimit: 'esi.dev/agent-memory-limit',
} as const satisfies Record<keyof AgentResources, string>;

export interface MutationInputs {
  namespace: string;
  request: InjectionRequest;
  resolved: Resolved;
  agent: AgentSettings;
}

/** One of ESI's own containers (the agent, or the sidecar mode's init container). */
export const isAgent = (c: V1Container) => c.name === AGENT_CONTAINER || c.name === AGENT_INIT_CONTAINER;

/** True when the pod already carries ESI's agent: re-admission injects nothing more (at
 *  most it moves the agent, placeAfterNativeSidecars). */
export function isInjected(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[INJECTED_ANNOTATION] !== undefined || [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].some(isAgent);
}

/** Directory of every agent-internal mount: the shared volume must not overlap it. */
export const AGENT_INTERNAL_DIR = '/var/run/esi';

/** The containers the request names, or every app container. */
export function targets(pod: V1Pod, request: InjectionRequest): V1Container[] {
  const spec = pod.spec;
  if (!request.containers) return spec?.containers ?? [];
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].filter((c) => request.containers!.includes(c.name));
}

/** JSON with object keys sorted: the same inputs give the same pod, whatever key order
 *  the objects arrived in (API cache vs. YAML files). */
export function canonicalJson(value: unknown): string {
  // Hand-rolled rather than a JSON.stringify replacer: it runs on every admission and
  // the replacer's per-object copies dominated the profile. Store and ExternalSecret specs
  // come from the informer cache, whose objects are replaced (never mutated) on update,
  // so their encoding is remembered per object.
  if (value === null || typeof value !== 'object') return value === undefined ? 'null' : JSON.stringify(value);
  const known = encoded.get(value);
  if (known !== undefined) return known;
  let out: string;
  if (Array.isArray(value)) out = `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  else {
    const keys = Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined).sort();
    out = `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  encoded.set(value, out);
  return out;
}

const encoded = new WeakMap<object, string>();

const shortHash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 10);

interface Mounts {
  volumes: V1Volume[];
  agentMounts: V1VolumeMount[];
  stores: Record<string, AgentStore>;
}

/** Mode of the token and credential files. The kubelet leaves them owned by root with this
 *  mode unless every container of the pod has the same runAsUser or the pod sets fsGroup;
 *  a mesh proxy with its own user (istio-proxy: 1337), an app without one, or the agent
 *  under --agent-run-as-user auto breaks that, and 0440 then left the agent unable to read
 *  its own token (EACCES, test/e2e/node/pods.test.ts). The volumes are mounted into the agent
 *  container alone, whose only process is the agent, so read for "other" opens them to no
 *  one else. The kubelet leaves these files root's with the volume's mode unless every container
 *  shares one runAsUser, so a narrower mode fails the agent under a UID of its own. */
const AGENT_ONLY_FILE_MODE = 0o444;

/** Token, credential and config-map volumes for the agent only, and the per-store config. */
function storeMounts(inputs: MutationInputs): Mounts {
  const { agent } = inputs;
  const volumes: V1Volume[] = [];
  const agentMounts: V1VolumeMount[] = [];
  const stores: Record<string, AgentStore> = {};
  const audiences = [...new Set([...inputs.resolved.stores.values()].filter((s) => s.identity).map((s) => s.identity!.audience ?? agent.defaultTokenAudience))].sort();
  if (audiences.length) {
    volumes.push({
      name: TOKENS_VOLUME,
      projected: {
        defaultMode: AGENT_ONLY_FILE_MODE,
        sources: audiences.map((audience, i) => ({
          serviceAccountToken: { ...(audience ? { audience } : {}), expirationSeconds: agent.tokenExpirationSeconds ?? 3600, path: `token-${i}` },
        })),
      },
    });
    agentMounts.push({ name: TOKENS_VOLUME, mountPath: TOKENS_DIR, readOnly: true });
  }
  const secretKeys = new Map<string, Set<string> | 'all'>();
  const configMapKeys = new Map<string, Set<string> | 'all'>();
  for (const store of inputs.resolved.stores.values()) {
    for (const c of store.credentials) {
      const map = c.kind === 'Secret' ? secretKeys : configMapKeys;
      const prev = map.get(c.name);
      if (!c.key || prev === 'all') map.set(c.name, 'all');
      else map.set(c.name, new Set([...(prev ?? []), c.key]));
    }
    stores[store.key] = agentStore(store, audiences, agent);
  }
  const items = (keys: Set<string> | 'all') => (keys === 'all' ? {} : { items: [...keys].sort().map((key) => ({ key, path: key })) });
  for (const [name, keys] of [...secretKeys].sort()) {
    const vol = `esi-cred-${shortHash(`secret/${name}`)}`;
    volumes.push({ name: vol, secret: { secretName: name, defaultMode: AGENT_ONLY_FILE_MODE, ...items(keys) } });
    agentMounts.push({ name: vol, mountPath: `${CREDENTIALS_DIR}/${name}`, readOnly: true });
  }
  for (const [name, keys] of [...configMapKeys].sort()) {
    const vol = `esi-cm-${shortHash(`configmap/${name}`)}`;
    volumes.push({ name: vol, configMap: { name, defaultMode: AGENT_ONLY_FILE_MODE, ...items(keys) } });
    agentMounts.push({ name: vol, mountPath: `${CONFIGMAPS_DIR}/${name}`, readOnly: true });
  }
  return { volumes, agentMounts, stores };
}

function agentStore(store: ResolvedStore, audiences: string[], agent: AgentSettings): AgentStore {
  const out: AgentStore = { kind: store.kind, name: store.name, provider: store.provider };
  if (store.credentials.some((c) => c.kind === 'Secret')) out.credentialsDir = CREDENTIALS_DIR;
  if (store.credentials.some((c) => c.kind === 'ConfigMap')) out.configMapsDir = CONFIGMAPS_DIR;
  if (store.identity) {
    const audience = store.identity.audience ?? agent.defaultTokenAudience;
    out.tokenPath = `${TOKENS_DIR}/token-${audiences.indexOf(audience)}`;
    if (audience) out.tokenAudience = audience;
  }
  return out;
}

export function agentConfig(pod: V1Pod, inputs: MutationInputs, mode: InjectionMode, stores: Record<string, AgentStore>): AgentConfig {
  const { request } = inputs;
  return {
    version: AGENT_CONFIG_VERSION,
    mode,
    pod: {
      namespace: inputs.namespace,
      name: pod.metadata?.name ?? pod.metadata?.generateName ?? '',
      serviceAccountName: pod.spec?.serviceAccountName ?? 'default',
    },
    outputDir: request.mountPath,
    fileMode: request.fileMode,
    refreshSeconds: request.refreshSeconds,
    port: request.agentPort,
    stores,
    secrets: inputs.resolved.secrets,
    templates: request.templates,
    ...(inputs.resolved.dynamicSecrets.length > 0 ? { dynamicSecrets: inputs.resolved.dynamicSecrets } : {}),
    ...(inputs.resolved.envVars ? { env: agentEnv(inputs.resolved.envVars) } : {}),
    ...(request.onChange ? { onChange: request.onChange } : {}),
    ...(mode !== 'init-only' ? { channelDir: CHANNEL_DIR } : {}),
  };
}

/** Whether `esi.dev/on-change: signal` needs CAP_KILL: Linux lets a process signal another
 *  of its own user without it. So not when the agent provably runs as the user of every app
 *  container (its user left to the pod, `auto`, and no container sets another; or a fixed
 *  user the containers all run as); otherwise it does, which Pod Security "restricted"
 *  forbids (admission says so: webhook/namespace-policy.ts). */
export function signalNeedsKill(pod: V1Pod, request: InjectionRequest, agent: AgentSettings): boolean {
  if (request.onChange?.type !== 'signal') return false;
  const podUser = pod.spec?.securityContext?.runAsUser;
  const setting = agent.runAsUser ?? AGENT_UID;
  const agentUser = setting === 'auto' ? podUser : setting;
  if (agentUser === undefined) return true;
  const apps = (pod.spec?.containers ?? []).filter((c) => !isAgent(c));
  return !apps.length || apps.some((c) => (c.securityContext?.runAsUser ?? podUser) !== agentUser);
}

function securityContext(pod: V1Pod, request: InjectionRequest, agent: AgentSettings): V1SecurityContext {
  const user = agent.runAsUser ?? AGENT_UID;
  return {
    runAsNonRoot: true,
    ...(user === 'auto' ? {} : { runAsUser: user, runAsGroup: user }),
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    // Nothing but KILL is ever added, and KILL only when signalling needs it.
    capabilities: { drop: ['ALL'], ...(signalNeedsKill(pod, request, agent) ? { add: ['KILL'] } : {}) },
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** The Go template engine (WebAssembly, docs/decisions/0015) adds ~60 MiB to an agent
 *  that renders Go templates; such an agent gets this limit unless the pod sets
 *  esi.dev/agent-memory-limit itself. */
const GO_TEMPLATE_AGENT_MEMORY_LIMIT = '192Mi';

function usesGoTemplates(config: AgentConfig): boolean {
  return config.secrets.some((s) => s.templateEngine === 'go' || s.dataFrom.some((d) => d.rewrite?.some((r) => r.transform)));
}

/** Facts of the pod an agent container depends on, beyond the parsed request. */
interface PodFacts {
  /** The resources the pod's own annotations set. */
  annotated: Set<keyof AgentResources>;
  securityContext: V1SecurityContext;
}

/** The agent's resources: the pod's annotation, else the chart-wide default, else the
 *  annotation's default. A Go-template agent without its own limit gets at least
 *  GO_TEMPLATE_AGENT_MEMORY_LIMIT. */
function agentResources(config: AgentConfig, request: InjectionRequest, defaults: AgentResources, annotated: Set<keyof AgentResources>) {
  const pick = (k: keyof AgentResources) => (annotated.has(k) ? request[k] : defaults[k] ?? request[k]);
  let memoryLimit = pick('memoryLimit');
  if (!annotated.has('memoryLimit') && usesGoTemplates(config) && quantityValue(memoryLimit) < quantityValue(GO_TEMPLATE_AGENT_MEMORY_LIMIT)) {
    memoryLimit = GO_TEMPLATE_AGENT_MEMORY_LIMIT;
  }
  return { requests: { cpu: pick('cpuRequest'), memory: pick('memoryRequest') }, limits: { memory: memoryLimit } };
}

// eslint-disable-next-line max-params -- the pod's facts are the pod's, not the parsed request's
function agentContainer(name: string, config: AgentConfig, inputs: MutationInputs, mounts: V1VolumeMount[], facts: PodFacts): V1Container {
  const { request, agent } = inputs;
  const health = (path: string) => ({ httpGet: { path, port: request.agentPort } });
  const c: V1Container = {
    name,
    image: agent.image,
    imagePullPolicy: agent.imagePullPolicy ?? 'IfNotPresent',
    args: ['agent'],
    env: [
      { name: AGENT_CONFIG_ENV, value: canonicalJson(config) },
      ...Object.entries(agent.env ?? {}).sort(([a], [b]) => a.localeCompare(b)).map(([name, value]) => ({ name, value })),
    ],
    resources: agentResources(config, request, agent.resources ?? {}, facts.annotated),
    securityContext: facts.securityContext,
    volumeMounts: [{ name: SECRETS_VOLUME, mountPath: request.mountPath }, ...mounts],
  };
  if (config.mode === 'native-sidecar') {
    c.restartPolicy = 'Always';
    // The app starts only after the first complete render (kubelet waits for this probe).
    c.startupProbe = { ...health('/readyz'), periodSeconds: 1, failureThreshold: 120, timeoutSeconds: 1 };
  }
  if (config.mode !== 'init-only') c.livenessProbe = { ...health('/healthz'), periodSeconds: 10, failureThreshold: 3, timeoutSeconds: 2 };
  return c;
}

/** Index after the pod's last native sidecar (e.g. a mesh proxy the agent may need for
 *  network: Istio's order is istio-init, then istio-proxy), or 0 when there is none. The one
 *  placement rule, at injection (mutatePod) and at re-admission (placeAfterNativeSidecars). */
export function afterNativeSidecars(inits: V1Container[]): number {
  for (let i = inits.length - 1; i >= 0; i--) if (inits[i]!.restartPolicy === 'Always') return i + 1;
  return 0;
}

/** Re-admission of an injected pod (reinvocationPolicy IfNeeded: a webhook that ran after
 *  ESI changed the pod). When a native sidecar that is not ESI's now follows ESI's init
 *  container — a mesh injector appended its proxy after the agent, which would then start
 *  without network — ESI's init container(s) move to where injection would have put them
 *  had the proxy been there first (afterNativeSidecars). Nothing else changes; returns
 *  `pod` itself when nothing moves, so applying it twice equals applying it once
 *  (docs/decisions/0001-opt-in-label-and-annotations.md). */
export function placeAfterNativeSidecars(pod: V1Pod): V1Pod {
  const inits = pod.spec?.initContainers ?? [];
  const first = inits.findIndex(isAgent);
  if (first < 0 || !inits.slice(first).some((c) => !isAgent(c) && c.restartPolicy === 'Always')) return pod;
  const others = inits.filter((c) => !isAgent(c));
  others.splice(afterNativeSidecars(others), 0, ...inits.filter(isAgent));
  return { ...pod, spec: { ...pod.spec!, initContainers: others } };
}

/** Returns the mutated copy of `pod`; `pod` itself is not modified. The copy shares every
 *  object it does not change with `pod` (only the objects on a changed path are new): the
 *  patch is the diff of the two, and fast-json-patch's diff skips identical objects, so an
 *  admission neither clones the whole pod nor walks its unchanged parts (the clone and the
 *  walk were ~15% of an admission's CPU, docs/performance/webhook-admission-profile.md). */
export function mutatePod(pod: V1Pod, inputs: MutationInputs): V1Pod {
  const spec: V1PodSpec = { containers: [], ...pod.spec };
  const out: V1Pod = { ...pod, spec };
  const { request } = inputs;
  const mounts = storeMounts(inputs);
  const envVars = inputs.resolved.envVars;
  // The env volume: the agent's alone; app containers get fileKeyRef entries instead.
  if (envVars) mounts.agentMounts.push(envAgentMount());
  // The controller's refresh floor and change generation (docs/fleet.md): a refreshing agent's only.
  const channel = request.mode !== 'init-only';
  if (channel) mounts.agentMounts.push({ name: CHANNEL_VOLUME, mountPath: CHANNEL_DIR, readOnly: true });
  const inits = [...(spec.initContainers ?? [])];
  const at = afterNativeSidecars(inits);
  const own = pod.metadata?.annotations ?? {};
  const annotated = new Set((Object.keys(RESOURCE_ANNOTATIONS) as (keyof AgentResources)[]).filter((k) => RESOURCE_ANNOTATIONS[k] in own));
  const facts: PodFacts = { annotated, securityContext: securityContext(pod, request, inputs.agent) };
  const containerFor = (name: string, mode: InjectionMode) => agentContainer(name, agentConfig(out, inputs, mode, mounts.stores), inputs, mounts.agentMounts, facts);
  if (request.mode === 'sidecar') {
    inits.splice(at, 0, containerFor(AGENT_INIT_CONTAINER, 'init-only'));
    spec.containers = [...spec.containers, containerFor(AGENT_CONTAINER, 'sidecar')];
  } else {
    inits.splice(at, 0, containerFor(AGENT_CONTAINER, request.mode));
  }
  spec.initContainers = inits;
  const wanted = new Set(targets(out, request).map((c) => c.name));
  const mounted = (c: V1Container): V1Container => {
    if (!wanted.has(c.name) || isAgent(c)) return c;
    const withMount = { ...c, volumeMounts: [...(c.volumeMounts ?? []), { name: SECRETS_VOLUME, mountPath: request.mountPath, readOnly: true }] };
    return envVars ? withEnvRefs(withMount, envVars) : withMount;
  };
  spec.initContainers = spec.initContainers.map(mounted);
  spec.containers = spec.containers.map(mounted);
  spec.volumes = [
    ...(spec.volumes ?? []),
    { name: SECRETS_VOLUME, emptyDir: { medium: 'Memory', sizeLimit: request.volumeSizeLimit } },
    ...(envVars ? [envVolume()] : []),
    ...(channel ? [{ name: CHANNEL_VOLUME, downwardAPI: { defaultMode: 0o444, items: channelItems() } }] : []),
    ...mounts.volumes,
  ];
  out.metadata = { ...out.metadata, annotations: { ...out.metadata?.annotations, [INJECTED_ANNOTATION]: request.mode } };
  return out;
}

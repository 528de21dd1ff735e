// The agent configuration: the one contract between the webhook (which writes it, as
// JSON, into the agent container's ESI_AGENT_CONFIG env var) and the agent (which
// reads it). It holds no secret value: only where to fetch from and where to write.
// Change it deliberately: bump `version` and keep the agent able to read the old one.
import type {
  ExternalSecretData,
  ExternalSecretDataFromRemoteRef,
  ExternalSecretTemplate,
  SecretStoreProvider,
} from './api/types.js';

export const AGENT_CONFIG_ENV = 'ESI_AGENT_CONFIG';
export const AGENT_CONFIG_VERSION = 1;

export type InjectionMode = 'native-sidecar' | 'init-only' | 'sidecar';

/** One store the agent talks to, copied from the SecretStore/ClusterSecretStore spec. */
export interface AgentStore {
  kind: 'SecretStore' | 'ClusterSecretStore';
  name: string;
  provider: SecretStoreProvider;
  /** Credential Secrets the webhook mounted into the agent container only: each
   *  referenced `{name, key}` is the file `<credentialsDir>/<name>/<key>`. */
  credentialsDir?: string;
  /** ConfigMaps the store references (CA bundles): `<configMapsDir>/<name>/<key>`. */
  configMapsDir?: string;
  /** Projected token of the pod's own service account for this store (pod identity). */
  tokenPath?: string;
  /** Audience that token was issued for. */
  tokenAudience?: string;
}

/** One mounted ExternalSecret: its files land in `<outputDir>/<name>/`. */
export interface AgentSecret {
  /** The ExternalSecret's name; also its directory and its name in template contexts. */
  name: string;
  /** Key into `AgentConfig.stores`. */
  store: string;
  data: ExternalSecretData[];
  dataFrom: ExternalSecretDataFromRemoteRef[];
  /** The ExternalSecret's own `target.template`, when it has one. */
  template?: ExternalSecretTemplate;
  /** The engine that renders `template`: Go (ESO's, the default) or handlebars (opt-in). */
  templateEngine?: 'go' | 'handlebars';
}

/** A file rendered from a handlebars template (annotation `esi.dev/template-<file>`). */
export interface AgentTemplate {
  /** File name relative to the output directory (no `/`, no `..`). */
  file: string;
  template: string;
}

export type OnChange =
  | { type: 'http'; url: string; method: 'POST' | 'PUT' | 'GET' }
  | { type: 'signal'; process: string; signal: NodeJS.Signals };

export interface AgentConfig {
  version: typeof AGENT_CONFIG_VERSION;
  mode: InjectionMode;
  pod: { namespace: string; name: string; serviceAccountName: string };
  /** Container path of the in-memory volume the agent writes (read-only in app containers). */
  outputDir: string;
  /** File mode of rendered files, e.g. 0o440 (JSON carries it as a number). */
  fileMode: number;
  /** Refresh period in seconds (sidecar modes); jitter is applied by the agent. */
  refreshSeconds: number;
  /** Default projected token for stores that set no `tokenPath` of their own. */
  tokenPath?: string;
  tokenAudience?: string;
  /** Port of the agent's health/metrics server (startup probe target). */
  port: number;
  stores: Record<string, AgentStore>;
  secrets: AgentSecret[];
  templates: AgentTemplate[];
  onChange?: OnChange;
}

/** Stable key of a store inside `AgentConfig.stores`. */
export function storeKey(kind: AgentStore['kind'], name: string, namespace?: string): string {
  return kind === 'ClusterSecretStore' ? `ClusterSecretStore/${name}` : `SecretStore/${namespace}/${name}`;
}

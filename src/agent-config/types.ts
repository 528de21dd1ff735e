// The agent configuration: the one contract between the webhook (which writes it, as
// JSON, into the agent container's ESI_AGENT_CONFIG env var) and the agent (which
// reads it). It holds no secret value: only where to fetch from and where to write.
// Declared once as a schema (src/agent-config/schema.ts); these types are derived from
// it, type-only, so importing them loads nothing. Validation: src/agent-config/check.ts.
// Change it deliberately: bump `version` and keep the agent able to read the old one.
import type { Static } from '@sinclair/typebox';
import type {
  AgentConfigSchema,
  AgentDynamicSecretSchema,
  AgentEnvSchema,
  AgentSecretSchema,
  AgentStoreSchema,
  AgentTemplateSchema,
  InjectionModeSchema,
  OnChangeSchema,
} from './schema.js';
import { storeIdOf } from '../stores/id.js';

export const AGENT_CONFIG_ENV = 'ESI_AGENT_CONFIG';
export const AGENT_CONFIG_VERSION = 1;

export type InjectionMode = Static<typeof InjectionModeSchema>;

/** One store the agent talks to, copied from the SecretStore/ClusterSecretStore spec. */
export type AgentStore = Static<typeof AgentStoreSchema>;

/** One mounted ExternalSecret: its files land in `<outputDir>/<name>/`. */
export type AgentSecret = Static<typeof AgentSecretSchema>;

/** A credential minted for this pod (docs/dynamic-secrets.md): `<outputDir>/<name>/`. */
export type AgentDynamicSecret = Static<typeof AgentDynamicSecretSchema>;

/** The env file the agent writes for `env[].valueFrom.fileKeyRef` (esi.dev/env). */
export type AgentEnv = Static<typeof AgentEnvSchema>;

/** A file rendered from a handlebars template (annotation `esi.dev/template-<file>`). */
export type AgentTemplate = Static<typeof AgentTemplateSchema>;

export type OnChange = Static<typeof OnChangeSchema>;

/** The validated configuration. `refreshSeconds` may be absent from an init-only
 *  config on the wire; the checker fills it in so the agent always has a number. */
export type AgentConfig = Omit<Static<typeof AgentConfigSchema>, 'refreshSeconds'> & { refreshSeconds: number };

/** Stable key of a store inside `AgentConfig.stores`. */
export function storeKey(kind: AgentStore['kind'], name: string, namespace?: string): string {
  return storeIdOf(kind, name, namespace);
}

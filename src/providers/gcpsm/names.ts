// Resource names of GCP Secret Manager (global `projects/<p>/secrets/<id>` and regional
// `projects/<p>/locations/<l>/secrets/<id>`), the regional endpoint, and the emulator
// endpoint override. Pure functions: no I/O.

/** Where the store's secrets live. */
export interface Scope {
  projectID: string;
  /** Region of regional secrets; global secrets when undefined. */
  location?: string;
}

/** The env var naming a Secret Manager emulator (`host:port`), the convention the GCP
 *  tooling uses for its emulators (`PUBSUB_EMULATOR_HOST`, …). The Node client does not
 *  read it itself; ESI does, and only then talks plaintext gRPC without credentials. */
export const EMULATOR_ENV = 'SECRET_MANAGER_EMULATOR_HOST';

/** A secret id as the API accepts it. */
export const SECRET_ID = /^[A-Za-z0-9_-]{1,255}$/;

const FULL_NAME = /^projects\/[^/]+\/(?:locations\/[^/]+\/)?secrets\/[^/]+(?:\/versions\/[^/]+)?$/;

export function parentName(s: Scope): string {
  return s.location ? `projects/${s.projectID}/locations/${s.location}` : `projects/${s.projectID}`;
}

/** True when the remote key is a full resource name rather than a secret id. */
export function isFullName(key: string): boolean {
  return FULL_NAME.test(key);
}

/** `projects/…/secrets/<id>` of a key (a secret id, or a full name with or without a version). */
export function secretName(s: Scope, key: string): string {
  if (isFullName(key)) return key.replace(/\/versions\/[^/]+$/, '');
  return `${parentName(s)}/secrets/${key}`;
}

/** The version to read: `version` (default `latest`) of the key's secret; a full version
 *  name in the key wins when no explicit version is given. */
export function versionName(s: Scope, key: string, version?: string): string {
  if (!version && isFullName(key) && key.includes('/versions/')) return key;
  return `${secretName(s, key)}/versions/${version || 'latest'}`;
}

/** The secret id of a full name as the API returns it (the project segment is then the
 *  project *number*, so the prefix cannot be compared with the configured project id). */
export function secretIdOf(fullName: string): string {
  const m = /\/secrets\/([^/]+)/.exec(fullName);
  return m ? m[1]! : fullName;
}

/** The API host of the store: the regional endpoint for regional secrets. */
export function apiEndpoint(location?: string): string {
  return location ? `secretmanager.${location}.rep.googleapis.com` : 'secretmanager.googleapis.com';
}

/** Parses `host:port` (or `[v6]:port`) of the emulator env var; undefined when unset. */
export function emulatorAddress(value: string | undefined): { host: string; port: number } | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(v);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port > 0 && port < 65536)) {
    throw new Error(`${EMULATOR_ENV} must be host:port, got "${v}"`);
  }
  return { host: (m[1] ?? m[2])!, port };
}

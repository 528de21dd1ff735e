// Plain constants of the agent configuration's schema, in a module without imports: the
// webhook and the agent read them at run time without loading the schema library.

/** Upper bound of the refresh period (24 h): far below Node's 32-bit timer limit
 *  (~24.8 days, beyond which a timer fires after 1 ms). */
export const MAX_REFRESH_SECONDS = 24 * 3600;
/** Signals the agent may send to a process of its pod. */
export const SIGNALS = ['SIGHUP', 'SIGUSR1', 'SIGUSR2', 'SIGTERM', 'SIGINT', 'SIGQUIT', 'SIGWINCH'] as const;
/** Characters of one template (also enforced by src/templating/handlebars/syntax.ts). */
export const MAX_TEMPLATE_LENGTH = 32 * 1024;
/** A name in the output directory: no "/", "\\", NUL; not ".", ".." or "..*" (the
 *  writer's own entries); the 255-byte limit is checked by fileNameProblem. */
export const FILE_NAME_PATTERN = '^(?!\\.\\.)(?!\\.$)[^/\\\\\\u0000]+$';
/** Names of environment variables ESI sets from its env file (esi.dev/env): C identifiers,
 *  what every shell and runtime accepts, at most 128 characters (kubelet 1.34's key limit). */
export const ENV_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,127}$';
/** Environment variables per pod from esi.dev/env (bounded admission and agent work). */
export const MAX_ENV_VARS = 64;

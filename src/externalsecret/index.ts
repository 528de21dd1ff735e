// The ExternalSecret layer: ESO v1 semantics of an ExternalSecret's data/dataFrom over
// a provider client, shared by the agent and the reconciler.
export { decodeMap, decodeValue } from './decode.js';
export { describeData, describeFrom, ExternalSecretError, fetchExternalSecret, toRemoteRef, type ExternalSecretSource, type FetchOptions } from './fetch.js';
export { describeSpecProblem, externalSecretSpecProblems, MAX_DATA_ENTRIES, MAX_DATA_FROM_ENTRIES, MAX_REWRITES, type Consumer, type SpecProblem } from './checks.js';
export { isValidSecretKey } from './keys.js';
export { applyRewrites, expandGoTemplate, type KeyTransform } from './rewrite.js';

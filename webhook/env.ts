// Moved to src/pod-contract/env.ts: the controller reads pods with the same parser (ADR 0070).
export * from '../src/pod-contract/env.js';

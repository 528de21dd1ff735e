// Moved to src/pod-contract/parse.ts: the controller reads pods with the same parser (ADR 0070).
export * from '../src/pod-contract/parse.js';

#!/usr/bin/env node
// Entry point of the `esi` command: the bundle that `npm run build` makes in dist/bundle/
// (tsc, then scripts/bundle.ts; docs/decisions/0046-bundled-entry.md says why). `esi agent`
// runs the same CLI from the agent's own bundle, split for the agent's imports alone, which
// starts faster (docs/decisions/0005-agent-footprint.md).
const { run } = process.argv[2] === 'agent' ? await import('../dist/bundle/agent/esi.mjs') : await import('../dist/bundle/esi.mjs');

process.exitCode = await run(process.argv.slice(2));

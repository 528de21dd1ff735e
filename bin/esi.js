#!/usr/bin/env node
// Entry point of the `esi` command: the bundle that `npm run build` makes in dist/bundle/
// (tsc, then scripts/bundle.ts; docs/decisions/0046-bundled-entry.md says why).
import { run } from '../dist/bundle/esi.mjs';

process.exitCode = await run(process.argv.slice(2));

#!/usr/bin/env node
// Entry point of the `esi` command (compiled code in dist/; `npm run build` makes it).
import { run } from '../dist/src/cli/main.js';

process.exitCode = await run(process.argv.slice(2));

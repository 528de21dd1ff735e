// `esi` entry point for running from source: `tsx src/cli/esi.ts <command>`.
import { run } from './main.js';

process.exitCode = await run(process.argv.slice(2));

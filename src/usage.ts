// The one error of a command invoked wrongly (a flag, its value, an input file): `esi` exits 2
// at once with its message (src/cli/main.ts; docs/cli.md, "Exit codes") and never retries.
// Its own module, so a command's entry (webhook/workers.ts) can throw it without loading more.
export class UsageError extends Error {
  override name = 'UsageError';
}

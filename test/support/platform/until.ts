// Polling for the state a test waits on (a Ready condition, a file, a pod phase): one helper
// for every test file, so the timeout message reads the same everywhere.

/** Calls `check` until it returns a truthy value (returned) or `ms` pass; the error names
 *  `what` and the last error `check` threw, if any. */
export async function until<X>(what: string, check: () => Promise<X | undefined | false>, ms = 60_000, everyMs = 250): Promise<X> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

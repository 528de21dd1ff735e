// A ProviderContext for tests: credentials from an in-memory map (what the agent reads
// from mounted files), the workload token from a function, a silent logger.
import { pino } from 'pino';
import type { Test } from 'tap';
import { ProviderError, type ProviderContext, type SecretKeySelector } from '../../src/providers/types.js';

export function testContext(opts: {
  storeId: string;
  spec: unknown;
  namespace?: string;
  credentials?: Record<string, string>;
  token?: () => Promise<string>;
  timeoutMs?: number;
}): ProviderContext {
  return {
    storeId: opts.storeId,
    namespace: opts.namespace ?? 'default',
    spec: opts.spec,
    logger: pino({ level: 'silent' }),
    timeoutMs: opts.timeoutMs ?? 5000,
    readCredential: async (ref: SecretKeySelector) => {
      const v = opts.credentials?.[`${ref.name}/${ref.key}`];
      if (v === undefined) throw new ProviderError('AuthFailed', opts.storeId, `credential ${ref.name}/${ref.key} is not mounted`);
      return Buffer.from(v);
    },
    serviceAccountToken: async () => {
      if (!opts.token) throw new ProviderError('AuthFailed', opts.storeId, 'no service-account token available');
      return opts.token();
    },
  };
}

/** The ProviderError a call fails with (a promise, or a function returning one); anything
 *  else, or success, fails the test. */
export async function providerError(p: Promise<unknown> | (() => Promise<unknown>)): Promise<ProviderError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    if (err instanceof ProviderError) return err;
    throw err;
  }
  throw new Error('expected a ProviderError');
}

/** Each call fails with its ProviderError code and a message matching `message`, and no
 *  message or error field carries the canary. */
export async function expectFailures(t: Test,
  cases: [() => Promise<unknown>, string, RegExp][], canary: RegExp): Promise<void> {
  for (const [p, code, message] of cases) {
    const e = await providerError(p);
    t.equal(e.code, code, e.message);
    t.match(e.message, message);
    t.notMatch(JSON.stringify({ m: e.message, e }), canary);
  }
}

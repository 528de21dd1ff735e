// The agent: wires the pipeline fetch → render → write → notify into the refresh loop,
// with the health/metrics server beside it. `root` prefixes every container path of
// the config (outputDir, tokenPath, credentialsDir), so the same agent runs unchanged
// outside a container (tests, benchmarks, `esi agent --root DIR`).
import type { Logger } from 'pino';
import type { AgentConfig } from '../src/agent-config/types.js';
import type { Provider } from '../src/providers/types.js';
import { TemplateEngine } from '../src/templating/index.js';
import { underRoot } from './config.js';
import { Fetcher, FetchError } from './fetch.js';
import { LeaseKeeper } from './leases.js';
import { runLoop, Wakeup } from './loop.js';
import { BackoffFile } from './backoff-state.js';
import { Channel } from './channel.js';
import { isThrottled } from '../src/providers/throttle.js';
import { AgentMetrics } from './metrics.js';
import { createNotifier, type Notifier } from './notify.js';
import { renderOutputs } from './render.js';
import { formatEnvFile } from './env-file.js';
import { startServer, type AgentServer } from './server.js';
import { terminationMessage } from '../src/agent-config/termination.js';
import { AtomicWriter } from './write.js';

export interface AgentOptions {
  config: AgentConfig;
  /** Prefix for every container path in the config; none inside a container. */
  root?: string;
  logger: Logger;
  /** Aborting stops the agent gracefully (SIGTERM in `esi agent`). */
  signal?: AbortSignal;
  /** Listen address of the health/metrics server; all interfaces by default. */
  host?: string;
  /** /proc of the shared process namespace (signal notifications); tests override it. */
  procRoot?: string;
  /** Provider lookup; the lazy registry by default. */
  loadProvider?: (name: string) => Promise<Provider>;
  /** Tunables for tests: backoff base of refresh and notification retries. */
  backoffBaseMs?: number;
  notifyBaseDelayMs?: number;
  /** How often the channel files are read (injector/channel.ts). */
  channelPollMs?: number;
}

export interface AgentHandle {
  /** Port of the health/metrics server; undefined in init-only mode (no server). */
  readonly port: number | undefined;
  readonly metrics: AgentMetrics;
  /** Resolves after the first complete render. */
  readonly ready: Promise<void>;
  /** Resolves to the exit code once the agent stopped. */
  readonly done: Promise<number>;
  /** Same as aborting `signal`. */
  stop(): void;
  /** The last failed cycle as a termination message (src/agent-config/termination.ts), until one succeeds. */
  lastFailure(): string | undefined;
}

interface Pipeline {
  fetcher: Fetcher;
  leases: LeaseKeeper;
  writer: AtomicWriter;
  /** The env file's own directory (esi.dev/env), absent without env vars. */
  envWriter?: AtomicWriter;
  notifier: Notifier;
  engine: TemplateEngine;
  metrics: AgentMetrics;
  /** The last failed cycle's termination message; cleared by a successful one. */
  lastFailure?: string;
}

type Stage = 'fetch' | 'render' | 'write';

function logFailure(logger: Logger, stage: Stage, err: unknown): void {
  if (err instanceof FetchError) {
    for (const f of err.failures) logger.error({ stage, secret: f.secret, store: f.store }, f.error.message);
  } else {
    logger.error({ stage }, (err as Error)?.message ?? String(err));
  }
}

/** One pass. Errors are logged (value-free) and counted here, then rethrown for the loop. */
function makeCycle(config: AgentConfig, p: Pipeline, logger: Logger): () => Promise<void> {
  return async () => {
    const stopTimer = p.metrics.renderDuration.startTimer();
    let stage: Stage = 'fetch';
    try {
      const fetched = await p.fetcher.fetchAll();
      if (p.leases.size > 0) for (const [name, data] of await p.leases.values()) fetched.set(name, data);
      stage = 'render';
      const { files, scopes } = renderOutputs(config, fetched, p.engine);
      const envFile = config.env ? formatEnvFile(config.env, scopes) : undefined;
      stage = 'write';
      // The env file first: an app the notification below restarts reads the new values.
      if (envFile) await p.envWriter!.write(new Map([[config.env!.file, envFile]]));
      const result = await p.writer.write(files);
      p.metrics.refreshes.inc({ result: 'success' });
      p.metrics.lastSuccess.setToCurrentTime();
      p.leases.published();
      p.lastFailure = undefined;
      if (result.changed) {
        p.metrics.swaps.inc();
        logger.info({ generation: result.generation, files: files.size }, 'published files');
      }
      if (result.replaced) p.notifier.notify();
    } catch (err) {
      p.metrics.refreshes.inc({ result: 'failure' });
      p.metrics.failures.inc({ stage });
      logFailure(logger, stage, err);
      p.lastFailure = terminationMessage(stage, err);
      throw err;
    } finally {
      stopTimer();
    }
  };
}

/** One cycle at a time: the refresh loop's and a rotation's publish (injector/leases.ts). */
function serial(cycle: () => Promise<void>): () => Promise<void> {
  let last: Promise<unknown> = Promise.resolve();
  return () => {
    const run = last.then(cycle, cycle);
    last = run.catch(() => undefined);
    return run;
  };
}

function buildPipeline(opts: AgentOptions, metrics: AgentMetrics, publish: () => Promise<boolean>): Pipeline {
  const { config, root, logger } = opts;
  const fetcher = new Fetcher({
    config,
    root,
    logger,
    loadProvider: opts.loadProvider,
    onProviderCall: (store) => metrics.providerCalls.inc({ store }),
  });
  return {
    metrics,
    engine: new TemplateEngine(),
    fetcher,
    leases: new LeaseKeeper({ config, openClient: (store) => fetcher.openClient(store), logger, metrics, publish }),
    writer: new AtomicWriter(underRoot(root, config.outputDir), config.fileMode, logger),
    // Only the kubelet (root) reads the env file: owner-read only.
    ...(config.env ? { envWriter: new AtomicWriter(underRoot(root, config.env.dir), 0o400, logger) } : {}),
    notifier: createNotifier(config.onChange, {
      logger,
      procRoot: opts.procRoot,
      baseDelayMs: opts.notifyBaseDelayMs,
      onResult: (ok) => metrics.notifications.inc({ result: ok ? 'success' : 'failure' }),
    }),
  };
}

/** Starts the agent and returns at once with a handle (the server is listening). */
export async function startAgent(opts: AgentOptions): Promise<AgentHandle> {
  const { config, logger } = opts;
  const abort = new AbortController();
  const onAbort = (): void => abort.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) abort.abort();

  const metrics = new AgentMetrics();
  if (config.mode !== 'init-only') metrics.refreshSeconds = () => config.refreshSeconds;
  let cycle: () => Promise<void> = async () => undefined;
  const p = buildPipeline(opts, metrics, () => cycle().then(() => true, () => false));
  cycle = serial(makeCycle(config, p, logger));
  let isReady = false;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const sidecar = config.mode !== 'init-only';
  let server: AgentServer | undefined;
  try {
    await p.writer.init();
    await p.envWriter?.init();
    if (sidecar) {
      server = await startServer({ port: config.port, host: opts.host, isReady: () => isReady, registry: () => metrics.registry(), logger });
    }
  } catch (err) {
    // Could not start (output dir not writable, port taken): release what exists.
    opts.signal?.removeEventListener('abort', onAbort);
    await Promise.allSettled([p.notifier.close(), p.leases.close(), p.fetcher.close()]);
    throw err;
  }
  const started = performance.now();
  logger.info(
    { mode: config.mode, secrets: config.secrets.length, templates: config.templates.length, envVars: config.env?.vars.length ?? 0, stores: Object.keys(config.stores), port: server?.port },
    'agent starting',
  );
  const onReady = (): void => {
    isReady = true;
    logger.info({ ms: Math.round(performance.now() - started) }, 'first render complete');
    markReady();
  };

  const wakeup = new Wakeup();
  const channel = sidecar && config.channelDir ? new Channel({
    dir: underRoot(opts.root, config.channelDir), logger, pollMs: opts.channelPollMs,
    onFloor: (seconds) => {
      logger.info({ floorSeconds: seconds ?? 0, refreshSeconds: config.refreshSeconds }, "the store's read budget set a new refresh floor");
      metrics.refreshFloor.set(seconds ?? 0);
      wakeup.wake('floor');
    },
    onChange: () => {
      metrics.changeNotices.inc();
      wakeup.wake('change');
    },
  }) : undefined;
  const done = (async (): Promise<number> => {
    let code = 1;
    try {
      await channel?.start();
      if (channel?.floorSeconds) metrics.refreshFloor.set(channel.floorSeconds);
      code = await runLoop({
        floorSeconds: () => channel?.floorSeconds,
        wakeup,
        state: new BackoffFile(underRoot(opts.root, config.outputDir)),
        throttled: isThrottled,
        mode: config.mode,
        refreshSeconds: config.refreshSeconds,
        cycle,
        onReady,
        signal: abort.signal,
        logger,
        backoffBaseMs: opts.backoffBaseMs,
      });
      if (!sidecar && code === 0) onReady();
    } finally {
      channel?.stop();
      opts.signal?.removeEventListener('abort', onAbort);
      // Leases first: revoked (unless opted out) while their clients are still open.
      await p.leases.close();
      await Promise.allSettled([p.notifier.close(), p.fetcher.close(), server?.close()]);
      logger.info({ code }, code === 0 ? 'agent stopped' : 'agent failed');
    }
    return code;
  })();
  return { port: server?.port, metrics, ready, done, stop: () => abort.abort(), lastFailure: () => p.lastFailure };
}

/** Runs the agent to completion; resolves to its exit code and, after a failure, the
 *  termination message for the kubelet (src/agent-config/termination.ts). */
export async function runAgent(opts: AgentOptions): Promise<number> {
  return (await runAgentReporting(opts)).code;
}

export async function runAgentReporting(opts: AgentOptions): Promise<{ code: number; failure?: string }> {
  const handle = await startAgent(opts);
  const code = await handle.done;
  return code === 0 ? { code } : { code, failure: handle.lastFailure() };
}

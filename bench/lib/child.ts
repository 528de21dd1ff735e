// Benchmark processes: TypeScript children started with tsx and driven over Node IPC with
// request/response messages ({ id, type, ... } → { id, ok, value | error }).
import { spawn, type ChildProcess } from 'node:child_process';

export interface Message {
  type: string;
  [k: string]: unknown;
}

interface Reply {
  id: number;
  ok: boolean;
  value?: unknown;
  error?: string;
}

export interface ChildOptions {
  /** Extra node flags, e.g. --cpu-prof. */
  nodeArgs?: string[];
  args?: string[];
  /** 'ignore' sends the child's stdout to /dev/null (e.g. a JSON logger at info). */
  stdout?: 'inherit' | 'ignore';
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

export class BenchChild {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private exited: Promise<number | null>;
  /** Resolves when the child has registered its handlers (serveParent sends `ready`). */
  readonly ready: Promise<void>;

  private constructor(readonly name: string, readonly proc: ChildProcess) {
    this.ready = new Promise((resolve, reject) => {
      proc.on('message', (m: { type?: string }) => m.type === 'ready' && resolve());
      proc.once('exit', (code) => reject(new Error(`${name} exited (code ${code}) before it was ready`)));
    });
    this.ready.catch(() => undefined);
    proc.on('message', (m: Reply) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.ok) p.resolve(m.value);
      else p.reject(new Error(`${name}: ${m.error}`));
    });
    this.exited = new Promise((resolve) => proc.once('exit', (code) => {
      for (const p of this.pending.values()) p.reject(new Error(`${name} exited (code ${code})`));
      this.pending.clear();
      resolve(code);
    }));
  }

  static start(name: string, file: string, opts: ChildOptions = {}): BenchChild {
    const proc = spawn(process.execPath, [...(opts.nodeArgs ?? []), '--import', 'tsx', file, ...(opts.args ?? [])], {
      stdio: ['ignore', opts.stdout ?? 'inherit', 'inherit', 'ipc'],
      cwd: opts.cwd, env: opts.env ?? process.env,
    });
    return new BenchChild(name, proc);
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  call<T>(msg: Message): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.proc.send({ ...msg, id });
    });
  }

  /** Asks the child to stop (a `stop` call), then waits for it to exit; kills it after graceMs. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await this.call({ type: 'stop' }).catch(() => undefined);
    await this.exited;
    clearTimeout(timer);
  }
}

type Handler = (msg: Message) => unknown;

/** In the child: answers the parent's calls with handlers[msg.type]. `stop` exits after replying. */
export function serveParent(handlers: Record<string, Handler>, onStop: () => Promise<void> = async () => undefined): void {
  if (!process.send) throw new Error('this process must be started by a benchmark runner (no IPC channel)');
  process.on('message', (raw: Message & { id: number }) => {
    void (async () => {
      if (raw.type === 'stop') {
        await onStop();
        process.send!({ id: raw.id, ok: true }, () => process.exit(0));
        return;
      }
      const handler = handlers[raw.type];
      try {
        if (!handler) throw new Error(`unknown call "${raw.type}"`);
        process.send!({ id: raw.id, ok: true, value: await handler(raw) });
      } catch (err) {
        process.send!({ id: raw.id, ok: false, error: (err as Error).stack ?? String(err) });
      }
    })();
  });
  // The parent going away must not leave a benchmark process behind.
  process.on('disconnect', () => void onStop().finally(() => process.exit(0)));
  process.send({ type: 'ready' });
}

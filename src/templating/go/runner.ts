// Runs requests through the WebAssembly Go template engine, synchronously (the webhook's
// admission path and the templating API are synchronous) and bounded: each request has a
// deadline, after which the worker (and the runaway template in it) is terminated and a
// fresh one is started on the next request; responses larger than the shared buffer are
// refused. Nothing loads until the first Go template: agents without one pay nothing.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import type * as WorkerThreads from 'node:worker_threads';
import { locateEngineWasm } from './locate.js';
import { STATE, WORKER_SOURCE } from './worker-source.js';

/** Room for one response (JSON with base64 outputs). */
const RESPONSE_BYTES = 16 * 1024 * 1024;
/** Compiling the module and starting Go once, on a loaded machine. */
const STARTUP_MS = 60_000;
/** The engine's memory ceiling, in 64 KiB WebAssembly pages (512 MiB). */
const MAX_MEMORY_PAGES = 8192;

export class GoEngineError extends Error {}

interface Running {
  worker: WorkerThreads.Worker;
  control: Int32Array;
  data: Uint8Array;
}

// The WebAssembly global exists in Node, but this project's TypeScript libs do not declare it.
type WasmModule = object;
const wasm = (globalThis as unknown as { WebAssembly: { Module: new (bytes: Uint8Array) => WasmModule } }).WebAssembly;

let compiled: WasmModule | undefined;
let running: Running | undefined;

function readLeb(b: Uint8Array, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  let i = at;
  for (;;) {
    const byte = b[i++]!;
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if ((byte & 0x80) === 0) return [value, i];
  }
}

function leb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) byte |= 0x80;
    out.push(byte);
  } while (n > 0);
  return out;
}

/** Gives the module's own memory a maximum: Go declares none, and a template that
 *  allocates without bound (`until 2000000000`) would otherwise grow it to 4 GiB. With a
 *  maximum, growth fails and Go stops with "out of memory" inside the sandbox. */
export function capMemory(bytes: Uint8Array, maxPages: number): Uint8Array {
  let i = 8; // magic + version
  while (i < bytes.length) {
    const id = bytes[i]!;
    const [size, body] = readLeb(bytes, i + 1);
    if (id === 5) {
      const [count, first] = readLeb(bytes, body);
      if (count !== 1) return bytes;
      const flags = bytes[first]!;
      const [min] = readLeb(bytes, first + 1);
      if (flags !== 0 && flags !== 1) return bytes; // shared or 64-bit memory: leave alone
      const content = [1, 1, ...leb(min), ...leb(Math.max(min, maxPages))];
      const section = [5, ...leb(content.length), ...content];
      const out = new Uint8Array(i + section.length + (bytes.length - body - size));
      out.set(bytes.subarray(0, i));
      out.set(section, i);
      out.set(bytes.subarray(body + size), i + section.length);
      return out;
    }
    i = body + size;
  }
  return bytes;
}

function compile(): WasmModule {
  // Baseline (Liftoff) code only: templates run for microseconds, while optimising a 12 MiB
  // module costs ~30 MiB and a second of CPU in a pod's agent. Only this module is WebAssembly.
  if (!compiled) setFlagsFromString('--liftoff-only');
  return (compiled ??= new wasm.Module(capMemory(readFileSync(locateEngineWasm()), MAX_MEMORY_PAGES)));
}

// node:worker_threads is required on the first spawn, not imported: nothing else in an agent
// loads it, and loading it costs every agent ~0.4 MiB of private memory
// (docs/performance/agent-startup.md). spawn is synchronous, so import() cannot do it.
const require = createRequire(import.meta.url);

function spawn(module: WasmModule): Running {
  const { Worker } = require('node:worker_threads') as typeof WorkerThreads;
  const control = new Int32Array(new SharedArrayBuffer(8));
  const data = new Uint8Array(new SharedArrayBuffer(RESPONSE_BYTES));
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { module, control, data },
    // No tsx or other loaders in the worker: it runs plain CommonJS.
    execArgv: [],
    env: {},
    stdout: true,
    stderr: true,
  });
  worker.unref();
  worker.on('error', () => undefined);
  return { worker, control, data };
}

/** The engine once its start is over (`outcome` of the wait for it); throws when it failed. */
function started(r: Running, outcome: string): Running {
  if (outcome === 'timed-out') {
    void r.worker.terminate();
    throw new GoEngineError('the Go template engine did not start in time');
  }
  if (Atomics.load(r.control, 0) !== STATE.READY) {
    const why = new TextDecoder().decode(r.data.slice(0, Atomics.load(r.control, 1)));
    void r.worker.terminate();
    throw new GoEngineError(why);
  }
  return r;
}

function start(): Running {
  const r = spawn(compile());
  return started(r, Atomics.wait(r.control, 0, STATE.STARTING, STARTUP_MS));
}

type WaitAsync = (a: Int32Array, i: number, v: number, ms: number) => { async: boolean; value: Promise<string> | string };

/** Compiles and starts the engine without blocking the event loop (the reconciler calls it
 *  before reconciling: its main thread parses Go templates; src/controller/controller.ts). */
export async function warmEngine(): Promise<void> {
  if (running) return;
  if (!compiled) setFlagsFromString('--liftoff-only');
  compiled ??= await (wasm as unknown as { compile(b: Uint8Array): Promise<WasmModule> }).compile(capMemory(readFileSync(locateEngineWasm()), MAX_MEMORY_PAGES));
  const r = spawn(compiled);
  const waited = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync(r.control, 0, STATE.STARTING, STARTUP_MS);
  const outcome = await waited.value;
  if (running) {
    void r.worker.terminate(); // a synchronous caller started one meanwhile
    return;
  }
  running = started(r, outcome);
}

function stop(): void {
  if (running) void running.worker.terminate();
  running = undefined;
}

/** Sends one JSON request; returns the parsed JSON response. */
export function callEngine(request: unknown, timeoutMs: number): unknown {
  const r = (running ??= start());
  Atomics.store(r.control, 0, STATE.BUSY);
  r.worker.postMessage(new TextEncoder().encode(JSON.stringify(request)));
  if (Atomics.wait(r.control, 0, STATE.BUSY, timeoutMs) === 'timed-out') {
    stop();
    throw new GoEngineError(`took longer than ${timeoutMs} ms and was stopped`);
  }
  const state = Atomics.load(r.control, 0);
  const body = new TextDecoder().decode(r.data.slice(0, Atomics.load(r.control, 1)));
  if (state === STATE.TOO_LARGE) throw new GoEngineError('rendered output is too large');
  if (state !== STATE.DONE) {
    stop();
    throw new GoEngineError(body);
  }
  return JSON.parse(body) as unknown;
}

/** Stops the worker (tests; a process exits without it: the worker is unref'd). */
export function stopEngine(): void {
  stop();
}

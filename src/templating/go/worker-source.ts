// The worker thread that runs the WebAssembly engine, as source text: an eval worker runs
// the same from src/ under tsx and from the compiled dist/ (no worker file to locate).
// Sandbox: WASI with no arguments but the program name, an empty environment and no
// preopened directories (no file, no network: WASI preview 1 has no sockets). The engine
// is a reactor: initialised once, then called once per request.
//
// Protocol over a SharedArrayBuffer, so that the caller can wait synchronously with a
// deadline: control[0] is the state, control[1] the response length, `data` the response.
export const STATE = { STARTING: 0, READY: 1, BUSY: 2, DONE: 3, FAILED: 4, TOO_LARGE: 5 } as const;

export const WORKER_SOURCE = `
'use strict';
process.removeAllListeners('warning'); // node:wasi is "experimental" on Node 20: no log noise
const { workerData, parentPort } = require('node:worker_threads');
const { WASI } = require('node:wasi');
const { module, control, data } = workerData;
const finish = (state, bytes) => {
  if (bytes.length > data.length) { state = ${STATE.TOO_LARGE}; bytes = new Uint8Array(0); }
  data.set(bytes);
  Atomics.store(control, 1, bytes.length);
  Atomics.store(control, 0, state);
  Atomics.notify(control, 0);
};
let ex;
try {
  // stdio goes nowhere: Go's runtime writes crash traces there, which are no one's logs.
  const devnull = require('node:fs').openSync('/dev/null', 'r+');
  const wasi = new WASI({
    version: 'preview1', args: ['esi-gotemplate'], env: {}, preopens: {}, returnOnExit: true,
    stdin: devnull, stdout: devnull, stderr: devnull,
  });
  const imports = wasi.getImportObject();
  // Go exits (proc_exit) on fatal errors such as running out of its capped memory; unwind
  // as an exception instead, so the caller gets an error and starts a fresh engine.
  imports.wasi_snapshot_preview1.proc_exit = (code) => { throw new Error('the engine stopped (exit code ' + code + ', e.g. out of memory)'); };
  const instance = new WebAssembly.Instance(module, imports);
  wasi.initialize(instance);
  ex = instance.exports;
  finish(${STATE.READY}, new Uint8Array(0));
} catch (err) {
  finish(${STATE.FAILED}, Buffer.from('engine start failed: ' + (err && err.message || String(err))));
}
parentPort.on('message', (input) => {
  try {
    const ptr = ex.esi_alloc(input.length);
    new Uint8Array(ex.memory.buffer, ptr, input.length).set(input);
    const n = ex.esi_run(input.length);
    finish(${STATE.DONE}, new Uint8Array(ex.memory.buffer, ex.esi_result(), n));
  } catch (err) {
    finish(${STATE.FAILED}, Buffer.from('engine failed: ' + (err && err.message || String(err))));
  }
});
`;

// The two ways the TypeScript Go-template engine declines a template. Neither carries a
// value: the caller (src/templating/go/index.ts) hands the template to the WebAssembly Go
// engine, which renders it or produces Go's own message.

/** The engine cannot show that it renders this template exactly as Go (an unimplemented
 *  function, a syntax error whose message only Go words exactly, a byte-level case). */
export class Unsupported extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'Unsupported';
  }
}

/** Go's execution would fail here; Go words the message (and redacts it). */
export class ExecFailure extends Unsupported {
  constructor(reason: string) {
    super(`execution error: ${reason}`);
    this.name = 'ExecFailure';
  }
}

/** Go's execution fails here, and this engine words the message exactly as Go does (so far:
 *  a missing map key, the commonest failure). `goMessage` is text/template's error with the
 *  Go engine's redaction applied (src/templating/gotext/index.ts); the caller redacts it
 *  again as it does Go's (src/templating/go/index.ts). */
export class GoExecError extends Error {
  constructor(readonly goMessage: string) {
    super(goMessage);
    this.name = 'GoExecError';
  }
}

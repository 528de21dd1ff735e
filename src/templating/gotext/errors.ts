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

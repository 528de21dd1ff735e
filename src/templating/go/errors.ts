// How ESI's Go-template engine fails a template. None carries a value: reasons name a
// function, a construct or a class of case; the entry point (index.ts) adds the template's
// name and redacts data values from anything worded after Go's messages.

/** ESI does not render this template: a function of Sprig or ESO it does not implement, or
 *  a case it cannot render exactly as Go does (docs/decisions/0087-templating-engines.md).
 *  `line`: the source line, when the parser refused it. */
export class Unsupported extends Error {
  line?: number;
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'Unsupported';
  }
}

/** Go's execution fails here as well (test/src/templating/go/index.differential.test.ts holds it);
 *  the reason is ESI's wording of the failure, not Go's. */
export class ExecFailure extends Unsupported {
  constructor(reason: string) {
    super(reason);
    this.name = 'ExecFailure';
  }
}

/** Go's parser rejects the template as well; the reason is ESI's port of Go's message. */
export class GoSyntaxError extends Error {
  line?: number;
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'GoSyntaxError';
  }
}

/** Go's execution fails here, and this engine words the message exactly as Go does (so far:
 *  a missing map key, the commonest failure, and a field of a string). `goMessage` is
 *  text/template's error, values redacted (text.ts); the entry point redacts it again. */
export class GoExecError extends Error {
  constructor(readonly goMessage: string) {
    super(goMessage);
    this.name = 'GoExecError';
  }
}

// The one error type of the generators: a message about the generator's spec or its call,
// never a generated value.

export class GeneratorError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'GeneratorError';
  }
}

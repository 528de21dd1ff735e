// The one error every template failure becomes, whichever engine: it names the template and,
// when known, the line and column, and never carries a value (docs/decisions/0007-no-values-in-errors.md).

export class TemplateError extends Error {
  constructor(
    /** Human name of the template, e.g. `annotation esi.dev/template-app.conf`. */
    readonly template: string,
    readonly reason: string,
    /** 1-based line and column, when known. */
    readonly line?: number,
    readonly column?: number,
  ) {
    super(`template ${template}${line ? ` line ${line}${column ? `, column ${column}` : ''}` : ''}: ${reason}`);
    this.name = 'TemplateError';
  }
}

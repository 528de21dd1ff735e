// Detects ESO's own template language (Go text/template + Sprig) in a template that is
// about to be rendered with handlebars. Both use `{{ }}`, so a Go template would often
// parse as handlebars and render garbage (or leak nothing but confuse everyone); we
// refuse it up front with a message that says which engine ESI speaks.

/** Go-only constructs: `{{ .field }}`, `{{ $var }}`, trim markers `{{-`/`-}}`,
 *  `{{ range …}}`, `{{ index . "k" }}`, `{{ if .x }}` / `{{ with .x }}`, `{{ end }}`
 *  (handlebars closes blocks with `{{/if}}`). `{{./x}}` and `{{.}}` are valid handlebars. */
const GO_PATTERNS: RegExp[] = [
  /\{\{-\s/,
  /\s-\}\}/,
  /\{\{-?\s*\.[A-Za-z_]/,
  /\{\{-?\s*\$/,
  /\{\{-?\s*(?:range|define|block|template)\s/,
  /\{\{-?\s*(?:if|with|index|not|and|or|len)\s+[.$]/,
  /\{\{-?\s*end\s*-?\}\}/,
];

export interface SourcePosition {
  /** 1-based. */
  line: number;
  column: number;
}

function position(source: string, offset: number): SourcePosition {
  const before = source.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

/** The position of the first Go-template-only construct, or undefined. */
export function detectGoTemplate(source: string): SourcePosition | undefined {
  let first: number | undefined;
  for (const re of GO_PATTERNS) {
    const m = re.exec(source);
    if (m && (first === undefined || m.index < first)) first = m.index;
  }
  return first === undefined ? undefined : position(source, first);
}

// The templates of a webhook store (url, headers, body, result.jsonPath): the subset of Go's
// text/template that ESO's webhook documentation and examples use, interpreted here
// because providers do not render (eslint: src/providers never imports src/templating) and
// the data is ESO's two-level map (`.remoteRef.key`, `.<secret name>.<key>`):
//   text {{ .a.b }} text, trim markers {{- -}}, pipelines `x | f`, string literals,
//   and the functions of FUNCTIONS below (Go's print/urlquery, Sprig's b64enc & co).
// Anything else (if/range/with, variables, other functions) is refused at admission with
// the template's field and the construct (validateSpec), never at the first call.
// Bounded: a template is at most MAX_TEMPLATE bytes and its output MAX_OUTPUT bytes.
// Errors name the field and the path, never a value.

const MAX_TEMPLATE = 16 * 1024;
const MAX_OUTPUT = 256 * 1024;

type Fn = (args: string[]) => string;
const one = (f: (s: string) => string): Fn => (args) => {
  if (args.length !== 1) throw new TemplateUseError(`takes one argument, got ${args.length}`);
  return f(args[0]!);
};

/** Functions a webhook template may call: the ones ESO's documented examples use. */
const FUNCTIONS: Record<string, Fn> = {
  // Go's print is fmt.Sprint: strings are concatenated without separators.
  print: (args) => args.join(''),
  urlquery: (args) => encodeURIComponent(args.join('')).replace(/%20/g, '+'),
  b64enc: one((s) => Buffer.from(s, 'utf8').toString('base64')),
  b64dec: one((s) => Buffer.from(s, 'base64').toString('utf8')),
  quote: (args) => args.map((a) => JSON.stringify(a)).join(' '),
  squote: (args) => args.map((a) => `'${a}'`).join(' '),
  upper: one((s) => s.toUpperCase()),
  lower: one((s) => s.toLowerCase()),
  trim: one((s) => s.trim()),
  toJson: one((s) => JSON.stringify(s)),
};

export class TemplateUseError extends Error {
  override name = 'TemplateUseError';
}

type Operand = { kind: 'field'; path: string[] } | { kind: 'string'; value: string } | { kind: 'fn'; name: string };
type Command = Operand[];
type Node = { kind: 'text'; text: string } | { kind: 'action'; pipeline: Command[] };

export interface Template {
  nodes: Node[];
  /** Every `.a.b` path the template reads. */
  fields: string[][];
}

function tokenize(src: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '|') {
      out.push('|');
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (j < src.length && src[j] !== '"') j += src[j] === '\\' ? 2 : 1;
      if (j >= src.length) throw new TemplateUseError('unterminated string');
      out.push(src.slice(i, j + 1));
      i = j + 1;
    } else if (c === '`') {
      const j = src.indexOf('`', i + 1);
      if (j < 0) throw new TemplateUseError('unterminated raw string');
      out.push(src.slice(i, j + 1));
      i = j + 1;
    } else {
      let j = i;
      while (j < src.length && !/[\s|"`]/.test(src[j]!)) j++;
      out.push(src.slice(i, j));
      i = j;
    }
  }
  return out;
}

function operand(tok: string): Operand {
  if (tok.startsWith('"')) {
    try {
      return { kind: 'string', value: JSON.parse(tok) as string };
    } catch {
      throw new TemplateUseError('a string literal uses an escape ESI does not read');
    }
  }
  if (tok.startsWith('`')) return { kind: 'string', value: tok.slice(1, -1) };
  if (tok.startsWith('.')) {
    const path = tok.slice(1).split('.');
    if (path.some((p) => !/^[A-Za-z_][A-Za-z0-9_-]*$/.test(p))) throw new TemplateUseError(`"${tok}" is not a field path ESI reads (.name.key)`);
    return { kind: 'field', path };
  }
  if (Object.hasOwn(FUNCTIONS, tok)) return { kind: 'fn', name: tok };
  if (/^\$|^(if|else|end|range|with|define|template|block)$/.test(tok)) throw new TemplateUseError(`"${tok}": control structures and variables are not supported in webhook templates`);
  throw new TemplateUseError(`function "${tok.slice(0, 40)}" is not supported in webhook templates (supported: ${Object.keys(FUNCTIONS).join(', ')})`);
}

function parseAction(src: string): Command[] {
  const pipeline: Command[] = [[]];
  for (const tok of tokenize(src)) {
    if (tok === '|') pipeline.push([]);
    else pipeline[pipeline.length - 1]!.push(operand(tok));
  }
  pipeline.forEach((cmd, i) => {
    if (cmd.length === 0) throw new TemplateUseError('empty command in a pipeline');
    if (cmd[0]!.kind !== 'fn' && cmd.length > 1) throw new TemplateUseError('only a function may take arguments');
    if (i > 0 && cmd[0]!.kind !== 'fn') throw new TemplateUseError('a pipeline stage after | must be a function');
  });
  return pipeline;
}

/** Parses a template; throws TemplateUseError naming the construct ESI does not support. */
export function parseTemplate(src: string): Template {
  if (Buffer.byteLength(src) > MAX_TEMPLATE) throw new TemplateUseError(`larger than ${MAX_TEMPLATE} bytes`);
  const nodes: Node[] = [];
  const fields: string[][] = [];
  let i = 0;
  let trimNext = false;
  while (i < src.length) {
    const open = src.indexOf('{{', i);
    let text = open < 0 ? src.slice(i) : src.slice(i, open);
    if (trimNext) text = text.replace(/^\s+/, '');
    if (open < 0) {
      if (text) nodes.push({ kind: 'text', text });
      break;
    }
    const close = src.indexOf('}}', open + 2);
    if (close < 0) throw new TemplateUseError('unclosed action ({{ without }})');
    let inner = src.slice(open + 2, close);
    if (inner.startsWith('- ') || inner === '-') {
      text = text.replace(/\s+$/, '');
      inner = inner.slice(1);
    }
    trimNext = inner.endsWith(' -');
    if (trimNext) inner = inner.slice(0, -1);
    if (text) nodes.push({ kind: 'text', text });
    if (/^\s*\/\*/.test(inner)) {
      i = close + 2;
      continue;
    }
    const pipeline = parseAction(inner);
    for (const cmd of pipeline) for (const o of cmd) if (o.kind === 'field') fields.push(o.path);
    nodes.push({ kind: 'action', pipeline });
    i = close + 2;
  }
  return { nodes, fields };
}

export type TemplateData = Record<string, Record<string, string>>;

function lookup(data: TemplateData, path: string[]): string {
  if (path.length !== 2) throw new TemplateUseError(`.${path.join('.')} must name a map and a key (.remoteRef.key, .<secret name>.<key>)`);
  const [map, key] = path as [string, string];
  const m = Object.hasOwn(data, map) ? data[map] : undefined;
  if (!m) throw new TemplateUseError(`.${map} is neither remoteRef nor a name listed in secrets`);
  if (!Object.hasOwn(m, key)) throw new TemplateUseError(`.${map}.${key} has no value`);
  return m[key]!;
}

function runPipeline(pipeline: Command[], data: TemplateData): string {
  const values = (ops: Operand[]) => ops.map((o) => (o.kind === 'field' ? lookup(data, o.path) : o.kind === 'string' ? o.value : FUNCTIONS[o.name]!([])));
  let piped: string | undefined;
  for (const cmd of pipeline) {
    const [head, ...rest] = cmd as [Operand, ...Operand[]];
    if (head.kind === 'fn') {
      const args = values(rest);
      if (piped !== undefined) args.push(piped);
      piped = FUNCTIONS[head.name]!(args);
    } else {
      piped = values([head])[0];
    }
  }
  return piped ?? '';
}

/** Renders a parsed template over `data`. */
export function render(t: Template, data: TemplateData): string {
  let out = '';
  for (const n of t.nodes) {
    out += n.kind === 'text' ? n.text : runPipeline(n.pipeline, data);
    if (out.length > MAX_OUTPUT) throw new TemplateUseError(`output larger than ${MAX_OUTPUT} bytes`);
  }
  return out;
}

// BENCHMARKS.md upkeep: one `## <benchmark>` section per benchmark, each owned and rewritten
// by its own runner; everything outside the runner's section is kept byte for byte.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

export const BENCHMARKS_PREAMBLE = `# Benchmarks

Measured results of ESI's benchmarks. Each \`##\` section belongs to one benchmark and is
rewritten by its runner (the command is in the section); the rest of the file is left alone.
Every section records the machine it ran on in its own "Machine" subsection: numbers from
different machines are not comparable.
`;

/** Replaces the `## title` section (up to the next `## ` heading) or appends it. */
export function replaceSection(text: string, title: string, body: string): string {
  const heading = `## ${title}`;
  const section = `${heading}\n\n${body.trim()}\n`;
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.trimEnd() === heading);
  if (start < 0) return `${text.trimEnd()}\n\n${section}`;
  let end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  if (end < 0) end = lines.length;
  const before = lines.slice(0, start).join('\n').trimEnd();
  const after = lines.slice(end).join('\n').trim();
  return `${before}\n\n${section}${after ? `\n${after}\n` : ''}`;
}

/** Rewrites one section of the benchmarks file, creating the file if needed. */
export function writeSection(file: string, title: string, body: string): void {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : BENCHMARKS_PREAMBLE;
  writeFileSync(file, replaceSection(text, title, body));
}

/** A GitHub-flavoured Markdown table; columns after the first are right-aligned. */
export function markdownTable(headers: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  const rule = headers.map((_, i) => (i === 0 ? '---' : '---:'));
  return [line(headers), line(rule), ...rows.map(line)].join('\n');
}

/** The same table, padded for a terminal. */
export function textTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

// Prints the failed assertions of a TAP log, each with its file and subtest path and the start
// of its diagnostic block. CI keeps only the end of a long log; .ci/run calls this after the
// tests so that what failed is always in that end (README.md, "When CI fails").
//
// usage: tsx test/support/platform/tap-failures.ts LOG   -> prints the failures; prints the failed
//        top-level files, one per line, on stdout when called with --files
import { readFileSync } from 'node:fs';

interface Failure {
  path: string[];
  line: string;
  diag: string[];
}

const DIAG_LINES = 14;

export function failures(tap: string): { failures: Failure[]; files: string[] } {
  const lines = tap.split('\n');
  const stack: { indent: number; name: string }[] = [];
  const found: Failure[] = [];
  const files: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const indent = line.length - line.trimStart().length;
    const text = line.trim();
    const sub = /^# Subtest: (.*)$/.exec(text);
    if (sub) {
      while (stack.length && stack[stack.length - 1]!.indent >= indent) stack.pop();
      stack.push({ indent, name: sub[1]! });
      continue;
    }
    const notOk = /^not ok \d+ - (.*?)(?: # time=.*)?$/.exec(text);
    if (!notOk) continue;
    if (indent === 0 && /^test\/\S+\.test\.ts$/.test(notOk[1]!)) files.push(notOk[1]!);
    // A parent's "not ok" repeats its children's: report the leaves only, i.e. a line whose
    // subtest (if it had one) reported no failure of its own.
    const parents = stack.filter((s) => s.indent < indent).map((s) => s.name);
    const isParent = found.some((f) => f.path.length > parents.length && f.path[parents.length] === notOk[1]);
    if (isParent) continue;
    const diag: string[] = [];
    if (lines[i + 1]?.trim() === '---') {
      for (let j = i + 2; j < lines.length && lines[j]!.trim() !== '...' && diag.length < DIAG_LINES; j++) {
        diag.push(lines[j]!.slice(indent));
      }
    }
    found.push({ path: [...parents, notOk[1]!], line: text, diag });
  }
  return { failures: found, files: [...new Set(files)] };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const log = process.argv[process.argv.length - 1]!;
  const { failures: found, files } = failures(readFileSync(log, 'utf8'));
  if (process.argv.includes('--files')) {
    for (const f of files) console.log(f);
  } else {
    console.log(`\n# ${found.length} failed assertion(s) in ${files.length} file(s)`);
    for (const f of found) {
      console.log(`\n## ${f.path.join(' > ')}`);
      for (const d of f.diag) console.log(`   ${d}`);
    }
  }
}

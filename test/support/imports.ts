// The runtime import graph of the TypeScript sources, read with the TypeScript parser:
// static imports and re-exports (type-only ones are erased and skipped) and literal
// dynamic import()s. Used to check what an image must contain for a command to run.
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export interface ImportEdge { from: string; specifier: string; dynamic: boolean }

export function runtimeImports(file: string): ImportEdge[] {
  const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const out: ImportEdge[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly && ts.isStringLiteral(node.moduleSpecifier)) {
      out.push({ from: file, specifier: node.moduleSpecifier.text, dynamic: false });
    } else if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      out.push({ from: file, specifier: node.moduleSpecifier.text, dynamic: false });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) out.push({ from: file, specifier: arg.text, dynamic: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}

const BUILTINS = new Set(builtinModules);

export function isBuiltin(specifier: string): boolean {
  return specifier.startsWith('node:') || BUILTINS.has(specifier);
}

/** Package name of a bare specifier (`@scope/name/sub` → `@scope/name`). */
export function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** `./x.js` imported from `file` → the .ts source it compiles from. */
export function resolveLocal(file: string, specifier: string): string {
  const target = resolve(dirname(file), specifier);
  for (const candidate of [target.replace(/\.js$/, '.ts'), target, join(target, 'index.ts')]) {
    if (existsSync(candidate) && candidate.endsWith('.ts')) return candidate;
  }
  throw new Error(`${file}: cannot resolve ${specifier}`);
}

export interface Graph { files: Set<string>; packages: Map<string, string>; leaving: ImportEdge[] }

/**
 * Walks from `roots`. Local files outside `keepDirs` are not followed: static imports of
 * them are reported in `leaving` (the image lacks them); dynamic ones are the lazy
 * subcommands of another image and are skipped. Bare specifiers land in `packages`
 * (package → first importing file).
 */
export function walk(root: string, roots: string[], keepDirs: string[], skipDynamicFrom: string[] = []): Graph {
  const g: Graph = { files: new Set(), packages: new Map(), leaving: [] };
  const inImage = (f: string) => keepDirs.some((d) => !relative(join(root, d), f).startsWith('..'));
  const queue = [...roots];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (g.files.has(file)) continue;
    g.files.add(file);
    for (const edge of runtimeImports(file)) {
      if (edge.dynamic && skipDynamicFrom.includes(file)) continue;
      if (isBuiltin(edge.specifier)) continue;
      if (!edge.specifier.startsWith('.')) {
        const name = packageName(edge.specifier);
        if (!g.packages.has(name)) g.packages.set(name, relative(root, file));
        continue;
      }
      const target = resolveLocal(file, edge.specifier);
      if (inImage(target)) queue.push(target);
      else if (!edge.dynamic) g.leaving.push({ ...edge, from: relative(root, file) });
    }
  }
  return g;
}

// Just enough of the Dockerfile and .dockerignore formats to check the image recipes
// without a Docker engine: instructions per stage with ARG defaults substituted, the
// .dockerignore matcher (last matching pattern wins, `!` re-includes, a match excludes
// everything under it), and the production dependency closure from package-lock.json
// (what `npm ci --omit=dev` installs, minus what a Dockerfile uninstalls).
import { readFileSync } from 'node:fs';
import { join, posix } from 'node:path';

export interface Instruction { cmd: string; args: string; line: number }
export interface Stage { name: string; from: string; instructions: Instruction[] }
export interface Dockerfile { globalArgs: Record<string, string>; stages: Stage[] }

function logicalLines(text: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let buf = '';
  let start = 0;
  text.split('\n').forEach((raw, i) => {
    const l = raw.trimEnd();
    if (buf === '' && (l.trim() === '' || l.trimStart().startsWith('#'))) return;
    if (buf === '') start = i + 1;
    if (l.endsWith('\\')) {
      buf += l.slice(0, -1) + ' ';
      return;
    }
    out.push({ text: (buf + l).trim(), line: start });
    buf = '';
  });
  return out;
}

function substitute(s: string, vars: Record<string, string>): string {
  return s.replace(/\$\{(\w+)\}|\$(\w+)/g, (m, a: string | undefined, b: string | undefined) => vars[(a ?? b)!] ?? m);
}

function argDefault(args: string): [string, string] {
  const eq = args.indexOf('=');
  if (eq < 0) return [args.trim(), ''];
  return [args.slice(0, eq).trim(), args.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1')];
}

export function parseDockerfile(text: string): Dockerfile {
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const { text: l, line } of logicalLines(text)) {
    const m = /^(\w+)\s+(.*)$/.exec(l);
    if (!m) throw new Error(`line ${line}: cannot parse "${l}"`);
    const cmd = m[1]!.toUpperCase();
    const args = m[2]!;
    if (cmd === 'FROM') {
      const [image, , name] = args.split(/\s+/);
      stages.push({ name: name ?? String(stages.length), from: substitute(image!, globalArgs), instructions: [] });
    } else if (stages.length === 0) {
      // A default may name an earlier ARG (NODE_IMAGE=node:${NODE_VERSION}-…), as Docker expands it.
      if (cmd === 'ARG') globalArgs[argDefault(args)[0]] = substitute(argDefault(args)[1], globalArgs);
    } else {
      stages.at(-1)!.instructions.push({ cmd, args, line });
    }
  }
  return { globalArgs, stages };
}

/** Value of an ARG declared in the stage (its default). */
export function stageArg(stage: Stage, name: string): string | undefined {
  const i = stage.instructions.find((x) => x.cmd === 'ARG' && argDefault(x.args)[0] === name);
  return i ? argDefault(i.args)[1] : undefined;
}

export interface Copy { from?: string; sources: string[]; dest: string; line: number }

export function copies(stage: Stage): Copy[] {
  return stage.instructions.filter((i) => i.cmd === 'COPY').map((i) => {
    const parts = i.args.split(/\s+/);
    const flags = parts.filter((p) => p.startsWith('--'));
    const paths = parts.filter((p) => !p.startsWith('--'));
    const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length);
    return { from, sources: paths.slice(0, -1), dest: paths.at(-1)!, line: i.line };
  });
}

/** Exec-form JSON array of ENTRYPOINT/CMD (shell form gives undefined). */
export function execForm(stage: Stage, cmd: 'ENTRYPOINT' | 'CMD'): string[] | undefined {
  const i = stage.instructions.filter((x) => x.cmd === cmd).at(-1);
  if (!i) return undefined;
  try {
    const v = JSON.parse(i.args) as unknown;
    return Array.isArray(v) ? (v as string[]) : undefined;
  } catch {
    return undefined;
  }
}

function globToRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      re += pattern[i + 2] === '/' ? '(?:.*/)?' : '.*';
      i += pattern[i + 2] === '/' ? 2 : 1;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** The .dockerignore of a context: excluded(path) for a context-relative path. */
export function dockerignore(text: string): (path: string) => boolean {
  const rules = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#')).map((l) => {
    const negate = l.startsWith('!');
    const p = posix.normalize((negate ? l.slice(1) : l).replace(/^\/+/, '')).replace(/\/+$/, '');
    return { negate, re: globToRegExp(p) };
  });
  return (path: string) => {
    const parts = posix.normalize(path).replace(/\/+$/, '').split('/');
    // A path is excluded when it or any of its parent directories matches.
    const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let excluded = false;
    for (const r of rules) if (candidates.some((c) => r.re.test(c))) excluded = !r.negate;
    return excluded;
  };
}

interface LockPackage { dev?: boolean; optional?: boolean; dependencies?: Record<string, string>; optionalDependencies?: Record<string, string>; peerDependencies?: Record<string, string>; peerDependenciesMeta?: Record<string, { optional?: boolean }> }

/**
 * Lockfile paths (node_modules/…) that `npm ci --omit=dev` installs for the given root
 * dependencies: resolution walks up from the requiring package like Node does.
 */
export function productionClosure(root: string, direct: string[]): Set<string> {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockPackage> };
  const pkgs = lock.packages;
  const resolve = (from: string, dep: string): string | undefined => {
    let dir = from;
    for (;;) {
      const candidate = `${dir ? `${dir}/` : ''}node_modules/${dep}`;
      if (pkgs[candidate]) return candidate;
      if (!dir) return undefined;
      const idx = dir.lastIndexOf('/node_modules/');
      dir = idx < 0 ? '' : dir.slice(0, idx);
    }
  };
  const seen = new Set<string>();
  const visit = (from: string, dep: string, optional: boolean) => {
    const p = resolve(from, dep);
    if (!p) {
      if (!optional) throw new Error(`package-lock.json: ${dep} (needed by ${from || 'the root'}) is not locked`);
      return;
    }
    if (seen.has(p)) return;
    seen.add(p);
    const info = pkgs[p]!;
    for (const d of Object.keys(info.dependencies ?? {})) visit(p, d, false);
    for (const d of Object.keys(info.optionalDependencies ?? {})) visit(p, d, true);
    for (const d of Object.keys(info.peerDependencies ?? {})) visit(p, d, info.peerDependenciesMeta?.[d]?.optional ?? false);
  };
  for (const d of direct) visit('', d, false);
  return seen;
}

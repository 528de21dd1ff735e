// Stage 3: publish a file set atomically, with kubelet's AtomicWriter layout:
//
//   <dir>/..2025_01_02T03_04_05_678Z.1a2b3c4d/   one generation: the complete set
//   <dir>/..data -> ..2025_…                      the current generation (swapped by rename)
//   <dir>/<name> -> ..data/<name>                 stable user-facing entries
//
// A generation is fully written and fsynced before `..data` moves, and `..data` moves by
// rename(2) of a temporary symlink, so anyone resolving `..data` sees the old set or the
// new set, never a mix or a half-written file. The generation replaced last is kept
// (readers that resolved it a moment ago can finish); older ones are removed. Content is
// hashed: an unchanged set causes no swap (and therefore no app notification).
import { createHash, randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, open, readdir, readFile, readlink, rename, rm, stat, symlink, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { FileSet } from './render.js';

export const DATA_LINK = '..data';
const TMP_LINK = '..data_tmp';
const LINK_TMP_PREFIX = '..link_';

export interface WriteResult {
  /** A new generation was published. */
  changed: boolean;
  /** …and it replaced an earlier one (the app may have read the old files). */
  replaced: boolean;
  generation: string;
}

/** Directory mode matching the file mode: read bits become read+search bits; the agent
 *  keeps write access so it can remove old generations. */
function dirModeFor(fileMode: number): number {
  let mode = 0o700;
  if (fileMode & 0o040) mode |= 0o050;
  if (fileMode & 0o004) mode |= 0o005;
  return mode;
}

/** sha256 over paths, modes and contents, in path order. */
export function hashFileSet(files: FileSet, mode: number): string {
  const h = createHash('sha256');
  for (const path of [...files.keys()].sort()) {
    const v = files.get(path)!;
    h.update(`${path}\0${mode.toString(8)}\0${v.length}\0`);
    h.update(v);
  }
  return h.digest('hex');
}

function topLevel(files: FileSet): Set<string> {
  return new Set([...files.keys()].map((p) => p.split('/')[0]!));
}

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function writeFileDurably(path: string, content: Uint8Array, mode: number): Promise<void> {
  const fh = await open(path, 'wx', mode);
  try {
    await fh.writeFile(content);
    // The process umask may have stripped bits: set the configured mode exactly.
    await fh.chmod(mode);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

function generationName(): string {
  return `..${new Date().toISOString().replace(/[-:.]/g, '_')}.${randomBytes(4).toString('hex')}`;
}

export class AtomicWriter {
  private currentHash: string | undefined;
  private current: string | undefined;

  constructor(
    private readonly dir: string,
    private readonly fileMode: number,
    private readonly logger: Logger,
  ) {}

  /** Prepares the directory and adopts an existing generation (e.g. written by the
   *  init container of the classic mode) so identical content is not rewritten. */
  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    // Leftovers of a crash between creating a temporary link and renaming it.
    for (const e of await readdir(this.dir)) {
      if (e === TMP_LINK || e.startsWith(LINK_TMP_PREFIX)) await rm(join(this.dir, e), { force: true });
    }
    const target = await readlink(join(this.dir, DATA_LINK)).catch(() => undefined);
    if (!target) return;
    try {
      const files = await this.readGeneration(join(this.dir, target));
      this.current = target;
      this.currentHash = files ? hashFileSet(files.set, files.mode) : undefined;
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'existing generation unreadable; it will be replaced');
      this.current = target;
    }
  }

  /** Reads a generation back (names, contents, a common mode) for comparison. */
  private async readGeneration(genDir: string): Promise<{ set: FileSet; mode: number } | undefined> {
    const set: FileSet = new Map();
    let mode: number | undefined;
    const walk = async (rel: string): Promise<void> => {
      for (const e of await readdir(join(genDir, rel), { withFileTypes: true })) {
        const relPath = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) await walk(relPath);
        else {
          const full = join(genDir, relPath);
          const m = (await stat(full)).mode & 0o7777;
          mode = mode === undefined || mode === m ? m : -1;
          set.set(relPath, new Uint8Array(await readFile(full)));
        }
      }
    };
    await walk('');
    return mode === -1 ? undefined : { set, mode: mode ?? this.fileMode };
  }

  /** Publishes `files` if they differ from the current generation. */
  async write(files: FileSet): Promise<WriteResult> {
    const hash = hashFileSet(files, this.fileMode);
    if (hash === this.currentHash && this.current) return { changed: false, replaced: false, generation: this.current };
    const gen = generationName();
    const genDir = join(this.dir, gen);
    try {
      await this.writeGeneration(genDir, files);
    } catch (err) {
      await rm(genDir, { recursive: true, force: true });
      throw err;
    }
    const previous = this.current;
    await this.swap(gen);
    this.current = gen;
    this.currentHash = hash;
    await this.syncTopLevel(files);
    await this.removeOldGenerations(gen, previous);
    return { changed: true, replaced: previous !== undefined, generation: gen };
  }

  private async writeGeneration(genDir: string, files: FileSet): Promise<void> {
    const dirMode = dirModeFor(this.fileMode);
    await mkdir(genDir, { mode: dirMode });
    // mkdir honours the umask; the configured modes must not depend on it.
    await chmod(genDir, dirMode);
    const dirs = new Set<string>([genDir]);
    for (const [rel, content] of files) {
      const path = join(genDir, rel);
      const parent = dirname(path);
      if (!dirs.has(parent)) {
        await mkdir(parent, { recursive: true, mode: dirMode });
        await chmod(parent, dirMode);
        dirs.add(parent);
      }
      await writeFileDurably(path, content, this.fileMode);
    }
    // Directory entries must be durable before `..data` can point at them.
    for (const d of [...dirs].reverse()) await fsyncPath(d);
  }

  /** rename(2) of a fresh symlink over `..data`: the atomic switch. */
  private async swap(gen: string): Promise<void> {
    const tmp = join(this.dir, TMP_LINK);
    await rm(tmp, { force: true });
    await symlink(gen, tmp);
    await rename(tmp, join(this.dir, DATA_LINK));
    await fsyncPath(this.dir);
  }

  /** Stable `<name> -> ..data/<name>` links: created for new names, removed for names
   *  that disappeared. Existing links need no change: they follow `..data`. */
  private async syncTopLevel(files: FileSet): Promise<void> {
    const wanted = topLevel(files);
    for (const name of wanted) {
      const path = join(this.dir, name);
      const st = await lstat(path).catch(() => undefined);
      if (st?.isSymbolicLink() && (await readlink(path)) === `${DATA_LINK}/${name}`) continue;
      if (st && !st.isSymbolicLink()) throw new Error(`output entry "${name}" exists and is not a symlink`);
      const tmp = join(this.dir, `${LINK_TMP_PREFIX}${randomBytes(4).toString('hex')}`);
      await symlink(`${DATA_LINK}/${name}`, tmp);
      await rename(tmp, path);
    }
    for (const e of await readdir(this.dir, { withFileTypes: true })) {
      if (e.name.startsWith('..') || wanted.has(e.name) || !e.isSymbolicLink()) continue;
      const target = await readlink(join(this.dir, e.name));
      if (target.startsWith(`${DATA_LINK}/`)) await unlink(join(this.dir, e.name));
    }
  }

  private async removeOldGenerations(current: string, previous: string | undefined): Promise<void> {
    for (const e of await readdir(this.dir, { withFileTypes: true })) {
      if (!e.isDirectory() || !e.name.startsWith('..') || e.name === current || e.name === previous) continue;
      await rm(join(this.dir, e.name), { recursive: true, force: true });
    }
  }

  /** The generation `..data` points to (for tests and logs). */
  get generation(): string | undefined {
    return this.current;
  }
}

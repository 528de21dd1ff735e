// Backoff that survives a restart of the agent container: the failure count and the time of
// the next attempt, in a file of the pod's memory-backed volume (emptyDir, kept across
// container restarts, gone with the pod). A crash-looping agent resumes its backoff instead
// of starting at 1 s and spending the store's quota again. The file holds two numbers, never
// a value; its name starts with `..`, which the atomic writer reserves and never removes
// (injector/write.ts only deletes `..` directories).
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const STATE_FILE = '..esi-agent-state';

export interface BackoffState {
  failures: number;
  /** Epoch ms of the next attempt; 0 when none is due. */
  nextAttemptAt: number;
}

const NO_BACKOFF: BackoffState = { failures: 0, nextAttemptAt: 0 };

export class BackoffFile {
  private last: BackoffState = NO_BACKOFF;

  constructor(private readonly dir: string) {}

  /** The state a previous run of the container left; none when there is no valid file. */
  async load(): Promise<BackoffState> {
    try {
      const v = JSON.parse(await readFile(join(this.dir, STATE_FILE), 'utf8')) as Partial<BackoffState>;
      const failures = Number.isInteger(v.failures) && v.failures! >= 0 && v.failures! < 1e6 ? v.failures! : 0;
      const at = typeof v.nextAttemptAt === 'number' && Number.isFinite(v.nextAttemptAt) ? v.nextAttemptAt : 0;
      this.last = { failures, nextAttemptAt: at };
    } catch {
      this.last = NO_BACKOFF;
    }
    return this.last;
  }

  /** Writes only on a change (a healthy agent writes nothing per cycle). Best effort: a
   *  volume that cannot take the file costs only the persistence. */
  async save(state: BackoffState): Promise<void> {
    if (state.failures === this.last.failures && state.nextAttemptAt === this.last.nextAttemptAt) return;
    this.last = state;
    const tmp = join(this.dir, `${STATE_FILE}.tmp`);
    try {
      await writeFile(tmp, JSON.stringify(state), { mode: 0o644 });
      await rename(tmp, join(this.dir, STATE_FILE));
    } catch {
      // the agent still backs off in memory
    }
  }
}

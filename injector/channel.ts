// The agent's end of the controller → agent channel (docs/fleet.md):
// the kubelet projects two annotations the controller writes on the pod into `channelDir`
// (a downwardAPI volume): the refresh floor the store's read budget sets, and a value-free
// change generation. Read when the directory changes (inotify: the kubelet projects an update
// by swapping the volume's `..data` link, so the agent sees it at once) and every `pollMs`
// as the safety net (a watch that could not start or lost an event). Reads of two small
// files, one at a time. Nothing is sent anywhere: the pod has no new API right and the files
// hold no secret.
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { channelValue, type ChannelFile } from '../src/pod-contract/channel.js';

export interface ChannelOptions {
  dir: string;
  logger: Logger;
  /** How often the files are read; 500 ms by default. */
  pollMs?: number;
  /** A new floor (seconds, or undefined when the controller removed it). */
  onFloor: (seconds: number | undefined) => void;
  /** A new change generation, not the one the agent started with. */
  onChange: (generation: string) => void;
}

export class Channel {
  private floor: number | undefined;
  private generation: string | undefined;
  private timer?: NodeJS.Timeout;
  private watcher?: FSWatcher;
  private started = false;
  /** The read in progress, and whether another was asked for meanwhile: reads never overlap,
   *  so an older read cannot land after a newer one. */
  private reading?: Promise<void>;
  private again = false;
  /** Last problem logged per file: a bad value is said once, not every poll. */
  private readonly told = new Map<ChannelFile, string>();

  constructor(private readonly o: ChannelOptions) {}

  get floorSeconds(): number | undefined {
    return this.floor;
  }

  private async read<F extends ChannelFile>(file: F): Promise<ReturnType<typeof channelValue<F>> | 'bad'> {
    let raw: string;
    try {
      raw = await readFile(join(this.o.dir, file), 'utf8');
    } catch {
      return undefined as never;
    }
    try {
      const v = channelValue(file, raw);
      this.told.delete(file);
      return v;
    } catch (err) {
      const why = (err as Error).message;
      if (this.told.get(file) !== why) this.o.logger.warn({ file }, `channel file ignored: ${why}`);
      this.told.set(file, why);
      return 'bad';
    }
  }

  /** One read of both files; exported for tests through poll(). */
  async poll(): Promise<void> {
    const [floor, generation] = await Promise.all([this.read('refresh-floor'), this.read('change-generation')]);
    if (floor !== 'bad' && floor !== this.floor) {
      this.floor = floor;
      if (this.started) this.o.onFloor(floor);
    }
    if (generation !== 'bad' && generation !== undefined && generation !== this.generation) {
      const first = this.generation === undefined && !this.started;
      this.generation = generation;
      if (!first) this.o.onChange(generation);
    }
  }

  /** A read now, or right after the one in progress. */
  private kick(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = this.poll().finally(() => {
      this.reading = undefined;
      if (this.again && this.timer) {
        this.again = false;
        void this.kick();
      }
    });
    return this.reading;
  }

  /** Reads the files once (the values the agent starts with), then follows them. */
  async start(): Promise<void> {
    await this.poll();
    this.started = true;
    const tick = (): void => {
      this.timer = setTimeout(() => void this.kick().finally(() => this.timer && tick()), this.o.pollMs ?? 500);
      this.timer.unref();
    };
    tick();
    try {
      this.watcher = watch(this.o.dir, { persistent: false }, () => void this.kick());
      this.watcher.on('error', () => this.unwatch());
    } catch {
      // No inotify here (or no directory yet): the poll alone.
    }
  }

  private unwatch(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.unwatch();
  }
}

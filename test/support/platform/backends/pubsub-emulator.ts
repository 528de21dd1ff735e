// Google's Cloud Pub/Sub emulator (pinned and cached by pubsub-emulator-install.sh) on
// 127.0.0.1 and a free port, in memory, under coreutils `timeout`; its REST API
// (`/v1/projects/…`) for the tests' setup: topics, subscriptions, publishing, and a look at
// what a subscription still holds.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { spawnBounded, waitUntilReady } from './bounded-process.js';
import { freePort } from '../processes.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

const HERE = join(import.meta.dirname, '..', '..', '..', 'platform', 'backends');

export interface PubsubEmulator {
  /** `127.0.0.1:<port>`: the value of PUBSUB_EMULATOR_HOST. */
  host: string;
  version: string;
  createTopic(topic: string): Promise<void>;
  createSubscription(subscription: string, topic: string): Promise<void>;
  /** Publishes; `data` is sent base64-encoded, as the API wants it. */
  publish(topic: string, messages: { data?: string; attributes?: Record<string, string> }[]): Promise<void>;
  /** Messages a pull would hand out now (pulled with a 0 s deadline, so they come back at once). */
  pending(subscription: string): Promise<number>;
  stop(): Promise<void>;
}

/** The pinned jar, or why it is not there (the caller skips). */
export function pubsubEmulatorJar(): { path: string; version: string } | { missing: string } {
  const version = /^JAR_VERSION=(\S+)/m.exec(readFileSync(join(HERE, 'pubsub-emulator-install.sh'), 'utf8'))?.[1];
  if (!version) throw new Error('pubsub-emulator-install.sh does not pin JAR_VERSION');
  const path = join(process.env.ESI_CACHE ?? join(homedir(), '.cache', 'esi'), 'pubsub-emulator', `cloud-pubsub-emulator-${version}-all.jar`);
  return existsSync(path) ? { path, version } : { missing: `Google's Pub/Sub emulator ${version} is not installed at ${path} (test/platform/backends/pubsub-emulator-install.sh says why)` };
}

export async function startPubsubEmulator(t: Teardown): Promise<PubsubEmulator> {
  const jar = pubsubEmulatorJar();
  if ('missing' in jar) throw new Error(jar.missing);
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const proc = spawnBounded('java', ['-jar', jar.path, '--host=127.0.0.1', `--port=${port}`]);
  t.teardown(() => proc.stop());
  const base = `http://${host}/v1`;
  const call = async (method: string, path: string, body?: object): Promise<Record<string, unknown>> => {
    const res = await fetch(`${base}/${path}`, { method, headers: { 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    if (!res.ok) throw new Error(`Pub/Sub emulator ${method} ${path}: HTTP ${res.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text || '{}') as Record<string, unknown>;
  };
  // Ready once *this* emulator says it listens (another server may take a free port).
  await waitUntilReady(proc, 'the Pub/Sub emulator', async () => proc.log().includes(`listening on ${port}`) && !!(await call('GET', 'projects/esi-probe/topics')), 120_000);
  return {
    host, version: jar.version,
    async createTopic(topic) {
      await call('PUT', topic, {});
    },
    async createSubscription(subscription, topic) {
      await call('PUT', subscription, { topic, ackDeadlineSeconds: 30 });
    },
    async publish(topic, messages) {
      await call('POST', `${topic}:publish`, { messages: messages.map((m) => ({ ...m, ...(m.data !== undefined ? { data: Buffer.from(m.data).toString('base64') } : {}) })) });
    },
    async pending(subscription) {
      const out = await call('POST', `${subscription}:pull`, { maxMessages: 100, returnImmediately: true });
      const received = (out.receivedMessages ?? []) as { ackId: string }[];
      if (received.length) await call('POST', `${subscription}:modifyAckDeadline`, { ackIds: received.map((r) => r.ackId), ackDeadlineSeconds: 0 });
      return received.length;
    },
    stop: () => proc.stop(),
  };
}

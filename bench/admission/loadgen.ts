// Benchmark load process: sends the corpus's AdmissionReviews to the webhook over TLS
// (keep-alive, CA-verified), each with a fresh uid, and checks every answer: uid echoed,
// allowed / patch / denial as the pod's shape expects; one in DEEP_EVERY answers is checked
// deeply (patch applied to the pod, the agent's config names exactly the requested secrets).
import type { V1Pod } from '@kubernetes/client-node';
import fastJsonPatch from 'fast-json-patch';
import { randomUUID } from 'node:crypto';
import { AGENT_CONFIG_ENV } from '../../src/agent-config/types.js';
import { AGENT_CONTAINER, SECRETS_VOLUME } from '../../webhook/mutate.js';
import { serveParent } from '../lib/child.js';
import { closedLoop, fixedRate, LoadClient, type Arrivals, type LoadRequest } from '../lib/load.js';
import { Rng } from '../lib/rng.js';
import { buildCorpus, type CorpusEntry } from './corpus.js';

const DEEP_EVERY = 25;
const UID_MARK = '@@UID@@';

interface Prepared {
  entry: CorpusEntry;
  /** The review's JSON split around its uid, so each request gets a fresh uid cheaply. */
  head: string;
  tail: string;
}

interface Answer {
  response?: { uid?: string; allowed?: boolean; patchType?: string; patch?: string; status?: { code?: number; message?: string } };
}

function prepare(entry: CorpusEntry): Prepared {
  const json = JSON.stringify({ ...entry.review, request: { ...entry.review.request, uid: UID_MARK } });
  const [head, tail] = json.split(`"${UID_MARK}"`) as [string, string];
  return { entry, head, tail };
}

function deepCheck(entry: CorpusEntry, patchB64: string): string | undefined {
  const patch = JSON.parse(Buffer.from(patchB64, 'base64').toString('utf8')) as fastJsonPatch.Operation[];
  const pod = fastJsonPatch.applyPatch(structuredClone(entry.review.request.object!), patch, true, false).newDocument as V1Pod;
  const agent = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find((c) => c.name === AGENT_CONTAINER);
  if (!agent) return `${entry.id}: patched pod has no ${AGENT_CONTAINER} container`;
  const raw = agent.env?.find((e) => e.name === AGENT_CONFIG_ENV)?.value;
  const config = raw ? (JSON.parse(raw) as { secrets?: { name: string }[] }) : undefined;
  const names = (config?.secrets ?? []).map((s) => s.name).sort().join(',');
  if (names !== [...entry.secrets].sort().join(',')) return `${entry.id}: agent config secrets "${names}", want "${entry.secrets.join(',')}"`;
  if (!pod.spec?.volumes?.some((v) => v.name === SECRETS_VOLUME)) return `${entry.id}: patched pod has no ${SECRETS_VOLUME} volume`;
  return undefined;
}

type Response = NonNullable<Answer['response']>;

const EXPECTATIONS: Record<CorpusEntry['expect'], (e: CorpusEntry, r: Response, deep: boolean) => string | undefined> = {
  skip: (e, r) => (r.allowed === true && !r.patch ? undefined : `${e.id}: expected allowed without patch`),
  deny: (e, r) => (r.allowed === false && r.status?.code === 403 && r.status.message?.includes('ESI cannot inject')
    ? undefined : `${e.id}: expected a 403 denial, got allowed=${r.allowed} ${r.status?.message ?? ''}`),
  inject: (e, r, deep) => {
    if (r.allowed !== true || r.patchType !== 'JSONPatch' || !r.patch) return `${e.id}: expected allowed with a JSONPatch, got allowed=${r.allowed} ${r.status?.message ?? ''}`;
    return deep ? deepCheck(e, r.patch) : undefined;
  },
};

function check(entry: CorpusEntry, uid: string, body: Buffer, deep: boolean): string | undefined {
  const r = (JSON.parse(body.toString('utf8')) as Answer).response;
  if (!r) return `${entry.id}: no response object`;
  if (r.uid !== uid) return `${entry.id}: uid ${r.uid}, sent ${uid}`;
  return EXPECTATIONS[entry.expect](entry, r, deep);
}

class Traffic {
  private i = 0;
  private readonly order: Prepared[];
  /** Deep checks done, for the report. */
  deepChecks = 0;

  constructor(corpus: CorpusEntry[], seed: number) {
    this.order = new Rng(seed).shuffle(corpus.map(prepare));
  }

  next = (): LoadRequest => {
    const p = this.order[this.i++ % this.order.length]!;
    const uid = randomUUID();
    const deep = this.i % DEEP_EVERY === 0 && p.entry.expect === 'inject';
    if (deep) this.deepChecks++;
    return {
      body: Buffer.from(`${p.head}"${uid}"${p.tail}`),
      tag: p.entry.shape,
      check: (_status, body) => {
        try {
          return check(p.entry, uid, body, deep);
        } catch (err) {
          return `${p.entry.id}: ${(err as Error).message}`;
        }
      },
    };
  };
}

let client: LoadClient | undefined;
let traffic: Traffic | undefined;
const rng = new Rng(99);

serveParent({
  init: (m) => {
    const corpus = buildCorpus(Number(m.corpusSize ?? 400));
    traffic = new Traffic(corpus, 1234);
    // One pool for the whole run, like the apiserver's long-lived transport.
    client = new LoadClient({ url: String(m.url), ca: String(m.caPem), timeoutMs: 10_000, maxIdleSockets: 25 });
    const sizes = corpus.map((e) => JSON.stringify(e.review).length);
    const byShape: Record<string, { count: number; bytes: number }> = {};
    for (const [i, e] of corpus.entries()) {
      const s = (byShape[e.shape] ??= { count: 0, bytes: 0 });
      s.count++;
      s.bytes += sizes[i]!;
    }
    return { reviews: corpus.length, minBytes: Math.min(...sizes), maxBytes: Math.max(...sizes), byShape };
  },
  rate: (m) => fixedRate(client!, traffic!.next, {
    rate: Number(m.rate), warmupMs: Number(m.warmupMs), durationMs: Number(m.durationMs),
    arrivals: (m.arrivals as Arrivals | undefined) ?? 'uniform', random: () => rng.next(),
  }),
  closed: (m) => closedLoop(client!, traffic!.next, {
    connections: Number(m.connections), warmupMs: Number(m.warmupMs), durationMs: Number(m.durationMs),
  }),
  deepChecks: () => traffic?.deepChecks ?? 0,
}, async () => client?.close());

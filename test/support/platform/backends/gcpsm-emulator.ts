// A GCP Secret Manager emulator for the gcpsm tests, on 127.0.0.1 and a free port.
//
// Which server runs (see gcpsm-emulator-install.sh):
//  - `gcp-secret-manager-emulator` (github.com/blackwell-systems/…, Go module, pinned)
//    when the install script could build it: the module proxy reachable from here
//    refuses that module (403 "not available"), so on this machine it is never built;
//  - otherwise ESI's own emulator below: a gRPC server of the real
//    `google.cloud.secretmanager.v1.SecretManagerService`, built from the protos shipped
//    in @google-cloud/secret-manager, so the official client talks to it over the real
//    wire protocol. It follows the public API's documented behaviour (names with project
//    numbers, `latest` = newest version whatever its state, FAILED_PRECONDITION for
//    disabled/destroyed versions, replication required for global and refused for
//    regional secrets, label syntax, `labels.k=v` / `name:x` filters). It is a test
//    double written here, not Google's implementation: what it does not model is listed
//    in GAPS (no auth, no IAM, no CRC32C, no OR in filters, no etags on versions).
//
// Either runs as a child process under coreutils `timeout`, so it stops by itself even
// if the test process dies; `t.teardown` stops it earlier.
import { spawnBounded, waitUntilReady } from './bounded-process.js';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { freePort } from '../processes.js';

const HERE = join(import.meta.dirname, '..', '..', '..', 'platform', 'backends');
const SELF = fileURLToPath(import.meta.url);

/** What ESI's emulator does not model (tests name these when a case cannot run). */
export const GAPS = {
  auth: 'no authentication or IAM (every call is allowed)',
  crc: 'no data_crc32c checksums',
  filterOr: 'no OR / negation in list filters',
} as const;

export interface GcpsmEmulator {
  /** `127.0.0.1:<port>`: the value of SECRET_MANAGER_EMULATOR_HOST. */
  endpoint: string;
  host: string;
  port: number;
  /** e.g. `esi-gcpsm-emulator@<sha>` or `gcp-secret-manager-emulator@v1.7.2`. */
  name: string;
  impl: 'esi' | 'blackwell';
  /** The official client on the emulator (plaintext), for seeding from tests. */
  client(): SecretManagerServiceClient;
  stop(): Promise<void>;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** The pinned Go emulator of the install script (one place to bump it). */
export function pinnedGoEmulator(): { module: string; version: string; path: string } {
  const script = readFileSync(join(HERE, 'gcpsm-emulator-install.sh'), 'utf8');
  const version = /^EMULATOR_VERSION=(\S+)/m.exec(script)?.[1];
  const module = /^EMULATOR_MODULE=(\S+)/m.exec(script)?.[1];
  if (!version || !module) throw new Error('gcpsm-emulator-install.sh does not pin EMULATOR_MODULE/EMULATOR_VERSION');
  const bin = join(process.env.ESI_CACHE ?? join(homedir(), '.cache', 'esi'), 'bin');
  return { module, version, path: join(bin, `gcpsm-emulator-${version}`) };
}

/** A content hash of this file: the "version" of ESI's emulator in test names. */
function selfVersion(): string {
  return createHash('sha256').update(readFileSync(SELF)).digest('hex').slice(0, 8);
}

export function emulatorClient(host: string, port: number): SecretManagerServiceClient {
  return new SecretManagerServiceClient({ apiEndpoint: host, port, sslCreds: grpc.credentials.createInsecure(), universeDomain: 'googleapis.com' });
}

async function probe(client: SecretManagerServiceClient): Promise<boolean> {
  try {
    await client.listSecrets({ parent: 'projects/esi-probe', pageSize: 1 }, { timeout: 1000, retry: null, autoPaginate: false });
    return true;
  } catch {
    return false;
  }
}

/** Starts the emulator and registers its stop on `t.teardown`. */
export async function startGcpsmEmulator(t: Teardown, opts: { impl?: 'esi' | 'blackwell' } = {}): Promise<GcpsmEmulator> {
  const port = await freePort();
  const go = pinnedGoEmulator();
  const impl = opts.impl ?? (existsSync(go.path) && process.env.ESI_GCPSM_EMULATOR !== 'esi' ? 'blackwell' : 'esi');
  const [cmd, ...args] = impl === 'blackwell'
    ? [go.path, '--port', String(port)]
    : [process.execPath, '--import', 'tsx', SELF, 'serve', '127.0.0.1', String(port)];
  const name = impl === 'blackwell' ? `gcp-secret-manager-emulator@${go.version}` : `esi-gcpsm-emulator@${selfVersion()}`;
  const proc = spawnBounded(cmd!, args, { cwd: resolve(HERE, '../../..') });
  const clients: SecretManagerServiceClient[] = [];
  const stop = async () => {
    await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
    await proc.stop();
  };
  t.teardown(stop);
  const client = () => {
    const c = emulatorClient('127.0.0.1', port);
    clients.push(c);
    return c;
  };
  const probeClient = client();
  await waitUntilReady(proc, `${name} on 127.0.0.1:${port}`, () => probe(probeClient));
  return { endpoint: `127.0.0.1:${port}`, host: '127.0.0.1', port, name, impl, client, stop };
}

// ---------------------------------------------------------------- ESI's emulator (child)

type Obj = Record<string, unknown>;
type State = 'ENABLED' | 'DISABLED' | 'DESTROYED';

interface Version { id: number; state: State; data: Buffer; created: number; destroyed?: number }
interface Secret { name: string; labels: Record<string, string>; annotations: Record<string, string>; replication?: Obj; created: number; etag: string; versions: Version[] }

class Fail extends Error {
  constructor(readonly code: grpc.status, readonly details: string) {
    super(details);
  }
}

const LABEL_KEY = /^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$/u;
const LABEL_VALUE = /^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$/u;
const SECRET_ID = /^[A-Za-z0-9_-]{1,255}$/;
const PARENT = /^projects\/([^/]+)(?:\/locations\/([^/]+))?$/;

const ts = (ms: number) => ({ seconds: String(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 });

/** Deterministic project number of a project id (the API answers with numbers). */
function projectNumber(project: string): string {
  if (/^\d+$/.test(project)) return project;
  return String(100000000000 + (parseInt(createHash('sha256').update(project).digest('hex').slice(0, 10), 16) % 899999999999));
}

function canonParent(parent: string): { parent: string; regional: boolean } {
  const m = PARENT.exec(parent);
  if (!m) throw new Fail(grpc.status.INVALID_ARGUMENT, `Invalid resource field value in the request: parent "${parent}"`);
  return { parent: `projects/${projectNumber(m[1]!)}${m[2] ? `/locations/${m[2]}` : ''}`, regional: !!m[2] };
}

function canonSecret(name: string): string {
  const m = /^(.+)\/secrets\/([^/]+)$/.exec(name);
  if (!m || !SECRET_ID.test(m[2]!)) throw new Fail(grpc.status.INVALID_ARGUMENT, `Invalid resource name "${name}"`);
  return `${canonParent(m[1]!).parent}/secrets/${m[2]}`;
}

function splitVersion(name: string): { secret: string; version: string } {
  const m = /^(.+)\/versions\/([^/]+)$/.exec(name);
  if (!m) throw new Fail(grpc.status.INVALID_ARGUMENT, `Invalid resource name "${name}"`);
  return { secret: canonSecret(m[1]!), version: m[2]! };
}

function checkLabels(labels: Record<string, string>): void {
  for (const [k, v] of Object.entries(labels)) {
    if (!LABEL_KEY.test(k) || !LABEL_VALUE.test(v)) throw new Fail(grpc.status.INVALID_ARGUMENT, `invalid label ${k}`);
  }
}

/** `term term …` (AND): `name:<substr>`, `name=<id>`, `labels.<k>=<v>`, `labels.<k>:<v|*>`. */
function matcher(filter: string): (s: Secret) => boolean {
  const terms = filter.trim().split(/\s+/).filter((x) => x && x !== 'AND');
  const tests = terms.map((term) => {
    const m = /^(name|labels\.[^:=]+)([:=])"?(.*?)"?$/.exec(term);
    if (!m || term === 'OR' || term.startsWith('-') || term.startsWith('NOT')) {
      throw new Fail(grpc.status.INVALID_ARGUMENT, `unsupported filter term "${term}" (${GAPS.filterOr})`);
    }
    const [, field, op, value] = m as unknown as [string, string, string, string];
    if (field === 'name') return (s: Secret) => (op === '=' ? s.name.endsWith(`/secrets/${value}`) : s.name.split('/secrets/')[1]!.includes(value));
    const k = field.slice('labels.'.length);
    return (s: Secret) => k in s.labels && (op === '=' ? s.labels[k] === value : value === '*' || s.labels[k]!.includes(value));
  });
  return (s) => tests.every((f) => f(s));
}

function page<T>(items: T[], req: { pageSize?: number; pageToken?: string }): { items: T[]; next: string } {
  const start = Number(req.pageToken || 0);
  const size = req.pageSize && req.pageSize > 0 ? Math.min(req.pageSize, 25000) : 25000;
  const end = start + size;
  return { items: items.slice(start, end), next: end < items.length ? String(end) : '' };
}

class Emulator {
  private readonly secrets = new Map<string, Secret>();
  private etags = 0;

  private etag(): string {
    return `"${(++this.etags).toString(16)}"`;
  }

  private get(name: string): Secret {
    const s = this.secrets.get(canonSecret(name));
    if (!s) throw new Fail(grpc.status.NOT_FOUND, `Secret [${canonSecret(name)}] not found.`);
    return s;
  }

  private secretOut(s: Secret): Obj {
    return { name: s.name, labels: s.labels, annotations: s.annotations, replication: s.replication ?? null, createTime: ts(s.created), etag: s.etag };
  }

  private versionOut(s: Secret, v: Version): Obj {
    return { name: `${s.name}/versions/${v.id}`, state: v.state, createTime: ts(v.created), destroyTime: v.destroyed ? ts(v.destroyed) : null };
  }

  /** `latest` is the newest version whatever its state (as the API). */
  private version(name: string): { s: Secret; v: Version } {
    const { secret, version } = splitVersion(name);
    const s = this.get(secret);
    const v = version === 'latest' ? s.versions[s.versions.length - 1] : s.versions.find((x) => String(x.id) === version);
    if (!v) throw new Fail(grpc.status.NOT_FOUND, `Secret Version [${secret}/versions/${version}] not found.`);
    return { s, v };
  }

  CreateSecret(req: Obj): Obj {
    const { parent, regional } = canonParent(String(req.parent));
    const id = String(req.secretId);
    if (!SECRET_ID.test(id)) throw new Fail(grpc.status.INVALID_ARGUMENT, `Invalid secret id "${id}"`);
    const body = (req.secret ?? {}) as Obj;
    const replication = body.replication as Obj | null | undefined;
    if (!regional && !replication?.replication) throw new Fail(grpc.status.INVALID_ARGUMENT, 'Secret.replication is required.');
    if (regional && replication?.replication) throw new Fail(grpc.status.INVALID_ARGUMENT, 'Replication is not supported for regional secrets.');
    const name = `${parent}/secrets/${id}`;
    if (this.secrets.has(name)) throw new Fail(grpc.status.ALREADY_EXISTS, `Secret [${name}] already exists.`);
    const labels = { ...((body.labels ?? {}) as Record<string, string>) };
    checkLabels(labels);
    const s: Secret = { name, labels, annotations: { ...((body.annotations ?? {}) as Record<string, string>) }, created: Date.now(), etag: this.etag(), versions: [] };
    if (replication?.replication) s.replication = replication;
    this.secrets.set(name, s);
    return this.secretOut(s);
  }

  GetSecret(req: Obj): Obj {
    return this.secretOut(this.get(String(req.name)));
  }

  ListSecrets(req: Obj): Obj {
    const { parent } = canonParent(String(req.parent));
    const match = req.filter ? matcher(String(req.filter)) : () => true;
    const all = [...this.secrets.values()].filter((s) => s.name.startsWith(`${parent}/secrets/`) && match(s));
    const { items, next } = page(all, req as { pageSize?: number; pageToken?: string });
    return { secrets: items.map((s) => this.secretOut(s)), nextPageToken: next, totalSize: all.length };
  }

  UpdateSecret(req: Obj): Obj {
    const body = (req.secret ?? {}) as Obj;
    const s = this.get(String(body.name));
    if (body.etag && body.etag !== s.etag) throw new Fail(grpc.status.ABORTED, 'etag mismatch');
    for (const path of ((req.updateMask as Obj | undefined)?.paths ?? []) as string[]) {
      if (path === 'labels') {
        checkLabels((body.labels ?? {}) as Record<string, string>);
        s.labels = { ...((body.labels ?? {}) as Record<string, string>) };
      } else if (path === 'annotations') s.annotations = { ...((body.annotations ?? {}) as Record<string, string>) };
      else throw new Fail(grpc.status.INVALID_ARGUMENT, `update_mask path "${path}" is not supported by this emulator`);
    }
    s.etag = this.etag();
    return this.secretOut(s);
  }

  DeleteSecret(req: Obj): Obj {
    const s = this.get(String(req.name));
    if (req.etag && req.etag !== s.etag) throw new Fail(grpc.status.ABORTED, 'etag mismatch');
    this.secrets.delete(s.name);
    return {};
  }

  AddSecretVersion(req: Obj): Obj {
    const s = this.get(String(req.parent));
    const data = Buffer.from(((req.payload ?? {}) as Obj).data as Uint8Array ?? []);
    if (data.length > 65536) throw new Fail(grpc.status.INVALID_ARGUMENT, 'Secret payload exceeds 64 KiB.');
    const v: Version = { id: (s.versions[s.versions.length - 1]?.id ?? 0) + 1, state: 'ENABLED', data, created: Date.now() };
    s.versions.push(v);
    return this.versionOut(s, v);
  }

  GetSecretVersion(req: Obj): Obj {
    const { s, v } = this.version(String(req.name));
    return this.versionOut(s, v);
  }

  AccessSecretVersion(req: Obj): Obj {
    const { s, v } = this.version(String(req.name));
    if (v.state !== 'ENABLED') throw new Fail(grpc.status.FAILED_PRECONDITION, `Secret Version [${s.name}/versions/${v.id}] is in ${v.state} state.`);
    return { name: `${s.name}/versions/${v.id}`, payload: { data: v.data } };
  }

  ListSecretVersions(req: Obj): Obj {
    const s = this.get(String(req.parent));
    const state = /^state:(\w+)$/.exec(String(req.filter ?? '').trim())?.[1];
    if (req.filter && !state) throw new Fail(grpc.status.INVALID_ARGUMENT, `unsupported filter "${String(req.filter)}"`);
    const all = [...s.versions].reverse().filter((v) => !state || v.state === state);
    const { items, next } = page(all, req as { pageSize?: number; pageToken?: string });
    return { versions: items.map((v) => this.versionOut(s, v)), nextPageToken: next, totalSize: all.length };
  }

  private setState(req: Obj, state: State): Obj {
    const { s, v } = this.version(String(req.name));
    if (v.state === 'DESTROYED') throw new Fail(grpc.status.FAILED_PRECONDITION, `Secret Version [${s.name}/versions/${v.id}] is in DESTROYED state.`);
    v.state = state;
    if (state === 'DESTROYED') {
      v.data = Buffer.alloc(0);
      v.destroyed = Date.now();
    }
    return this.versionOut(s, v);
  }

  EnableSecretVersion(req: Obj): Obj {
    return this.setState(req, 'ENABLED');
  }

  DisableSecretVersion(req: Obj): Obj {
    return this.setState(req, 'DISABLED');
  }

  DestroySecretVersion(req: Obj): Obj {
    return this.setState(req, 'DESTROYED');
  }
}

const METHODS = [
  'CreateSecret', 'GetSecret', 'ListSecrets', 'UpdateSecret', 'DeleteSecret', 'AddSecretVersion', 'GetSecretVersion',
  'AccessSecretVersion', 'ListSecretVersions', 'EnableSecretVersion', 'DisableSecretVersion', 'DestroySecretVersion',
] as const;

/** Serves ESI's emulator in this process; resolves once listening. */
export async function serveEmulator(host: string, port: number): Promise<grpc.Server> {
  const require = createRequire(import.meta.url);
  const json = require('@google-cloud/secret-manager/build/protos/protos.json') as Parameters<typeof protoLoader.fromJSON>[0];
  const def = protoLoader.fromJSON(json, { keepCase: false, longs: String, enums: String, defaults: false, oneofs: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { google: { cloud: { secretmanager: { v1: { SecretManagerService: grpc.ServiceClientConstructor } } } } };
  const emu = new Emulator();
  const impl: grpc.UntypedServiceImplementation = {};
  for (const m of METHODS) {
    impl[m] = (call: grpc.ServerUnaryCall<Obj, Obj>, cb: grpc.sendUnaryData<Obj>) => {
      try {
        cb(null, (emu[m] as (r: Obj) => Obj).call(emu, call.request));
      } catch (err) {
        const f = err instanceof Fail ? err : new Fail(grpc.status.INTERNAL, (err as Error).message);
        cb({ code: f.code, details: f.details, name: 'Fail', message: f.details });
      }
    };
  }
  const server = new grpc.Server();
  server.addService(pkg.google.cloud.secretmanager.v1.SecretManagerService.service, impl);
  await new Promise<number>((ok, ko) => server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (e, p) => (e ? ko(e) : ok(p))));
  return server;
}

if (process.argv[2] === 'serve' && resolve(process.argv[1] ?? '') === SELF) {
  const [host, port] = [process.argv[3] ?? '127.0.0.1', Number(process.argv[4])];
  const server = await serveEmulator(host, port);
  process.stdout.write(`esi-gcpsm-emulator listening on ${host}:${port}\n`);
  const bye = () => server.tryShutdown(() => process.exit(0));
  process.on('SIGTERM', bye);
  process.on('SIGINT', bye);
}

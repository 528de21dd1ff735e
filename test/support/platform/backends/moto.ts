// Starts moto's server (AWS Secrets Manager, SSM Parameter Store, STS and IAM in one
// process; installed by moto-install.sh) on 127.0.0.1 and a free port, in memory. The
// process is wrapped in coreutils `timeout`, so it stops by itself even if the test
// process dies.
//
// IAM authentication: moto accepts any request until it is told to check them. Tests
// create users (access keys + policies) and roles while it is open, then call
// `enableAuth()`: from then on every request must be signed with a key moto issued
// (or temporary credentials from its STS) and be allowed by that principal's policies.
// STS AssumeRoleWithWebIdentity is unsigned by design and moto's check has no exception
// for it, so `allowUnauthenticated(1)` lets exactly the next request through.
import { spawnBounded, waitUntilReady } from './bounded-process.js';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../processes.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface AccessKey {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface MotoServer {
  /** `http://127.0.0.1:<port>`: every service answers on it. */
  endpoint: string;
  region: string;
  /** moto's fixed account id. */
  account: string;
  version: string;
  /** An IAM user with `policy` (an IAM policy document) and an access key. */
  createUser(name: string, policy: object): Promise<AccessKey>;
  /** An IAM role with a trust policy and a permission policy; returns its ARN. */
  createRole(name: string, trust: object, policy: object): Promise<string>;
  /** From now on every request is authenticated and authorized by moto's IAM. */
  enableAuth(): Promise<void>;
  /** The next `n` requests skip authentication; then it is enforced again. */
  allowUnauthenticated(n: number): Promise<void>;
  stop(): Promise<void>;
}

const HERE = join(import.meta.dirname, '..', '..', '..', 'platform', 'backends');

/** The pinned version, read from the install script so there is one place to bump it. */
export function motoVersion(): string {
  const m = /^MOTO_VERSION=(\S+)/m.exec(readFileSync(join(HERE, 'moto-install.sh'), 'utf8'));
  if (!m?.[1]) throw new Error('moto-install.sh does not pin MOTO_VERSION');
  return m[1];
}

export function motoBinary(): string {
  const venv = join(process.env.ESI_CACHE ?? join(homedir(), '.cache', 'esi'), 'venv', `moto-${motoVersion()}`);
  const bin = join(venv, 'bin', 'moto_server');
  if (!existsSync(bin) || !existsSync(join(venv, '.esi-stamp'))) {
    throw new Error(`moto is not installed at ${venv}: run \`npm run platform:build\` (test/platform/backends/moto-install.sh)`);
  }
  return bin;
}

/** An IAM policy document allowing `actions` on `resources`. */
export function allow(actions: string[], resources: string[] = ['*']): object {
  return { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: actions, Resource: resources }] };
}

const xmlField = (xml: string, field: string) => new RegExp(`<${field}>([^<]*)</${field}>`).exec(xml)?.[1];

/** Points this process's AWS SDK (and the processes it starts, e.g. `esi controller`) at
 *  `moto` through AWS_ENDPOINT_URL, as an operator would; the previous value comes back when
 *  the test ends. */
export function useMotoEndpoint(t: Teardown, moto: Pick<MotoServer, 'endpoint'>): void {
  const saved = process.env.AWS_ENDPOINT_URL;
  process.env.AWS_ENDPOINT_URL = moto.endpoint;
  t.teardown(() => {
    if (saved === undefined) delete process.env.AWS_ENDPOINT_URL;
    else process.env.AWS_ENDPOINT_URL = saved;
  });
}

export async function startMoto(t: Teardown, opts: { region?: string } = {}): Promise<MotoServer> {
  const bin = motoBinary();
  const dir = await mkdtemp(join(tmpdir(), 'esi-moto-'));
  const port = await freePort();
  const region = opts.region ?? 'us-east-1';
  // No AWS_* from the developer's shell; HOME in the temp dir.
  const proc = spawnBounded(bin, ['-H', '127.0.0.1', '-p', String(port)], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, LANG: 'C.UTF-8' },
  });
  const stop = async () => {
    await proc.stop();
    await rm(dir, { recursive: true, force: true });
  };
  t.teardown(stop);
  const endpoint = `http://127.0.0.1:${port}`;
  // Ready once *this* moto says it listens: between freePort() and the bind another server
  // may take the port (tests run in parallel), and its answers must not count as ours.
  const listening = `Running on ${endpoint}`;
  await waitUntilReady(proc, 'moto_server', async () => proc.log().includes(listening) && (await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(2000) })).ok);

  let authOn = false;
  /** The IAM query API. Unsigned: only while authentication is off (the header only
   *  tells moto which service the request is for). */
  const iam = async (action: string, params: Record<string, string>): Promise<string> => {
    if (authOn) throw new Error('moto IAM setup must happen before enableAuth()');
    const res = await fetch(endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `AWS4-HMAC-SHA256 Credential=AKIASETUP/20240101/${region}/iam/aws4_request, SignedHeaders=host, Signature=0`,
      },
      body: new URLSearchParams({ Action: action, Version: '2010-05-08', ...params }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`moto IAM ${action}: HTTP ${res.status}: ${text.slice(0, 300)}`);
    return text;
  };
  const resetAuth = async (n: number | 'inf') => {
    const res = await fetch(`${endpoint}/moto-api/reset-auth`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: String(n) });
    if (!res.ok) throw new Error(`moto reset-auth: HTTP ${res.status}`);
  };

  return {
    endpoint,
    region,
    account: '123456789012',
    version: motoVersion(),
    async createUser(name, policy) {
      await iam('CreateUser', { UserName: name });
      await iam('PutUserPolicy', { UserName: name, PolicyName: `${name}-policy`, PolicyDocument: JSON.stringify(policy) });
      const xml = await iam('CreateAccessKey', { UserName: name });
      const accessKeyId = xmlField(xml, 'AccessKeyId');
      const secretAccessKey = xmlField(xml, 'SecretAccessKey');
      if (!accessKeyId || !secretAccessKey) throw new Error(`moto CreateAccessKey returned no key: ${xml.slice(0, 200)}`);
      return { accessKeyId, secretAccessKey };
    },
    async createRole(name, trust, policy) {
      const xml = await iam('CreateRole', { RoleName: name, AssumeRolePolicyDocument: JSON.stringify(trust) });
      await iam('PutRolePolicy', { RoleName: name, PolicyName: `${name}-policy-${randomBytes(2).toString('hex')}`, PolicyDocument: JSON.stringify(policy) });
      const arn = xmlField(xml, 'Arn');
      if (!arn) throw new Error(`moto CreateRole returned no ARN: ${xml.slice(0, 200)}`);
      return arn;
    },
    async enableAuth() {
      await resetAuth(0);
      authOn = true;
    },
    async allowUnauthenticated(n) {
      await resetAuth(n);
    },
    stop,
  };
}

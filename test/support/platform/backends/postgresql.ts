// Starts a private PostgreSQL server (Debian's package, postgresql-install.sh) on 127.0.0.1
// and a free port, in a temporary data directory, with a superuser `esi` and a random
// password: the database behind OpenBao's database secrets engine. As root (the tests' usual
// user) initdb and postgres run as the package's `postgres` user (PostgreSQL refuses root).
// The server runs under coreutils `timeout` (stops by itself) and stops on SIGINT (fast
// shutdown: it does not wait for OpenBao's pooled connections).
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../processes.js';
import { spawnBounded, waitUntilReady } from './bounded-process.js';

const run = promisify(execFile);
const PG_MAJOR = 15;
const BIN = `/usr/lib/postgresql/${PG_MAJOR}/bin`;

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Login {
  user: string;
  password: string;
}

export interface PostgresServer {
  host: '127.0.0.1';
  port: number;
  /** The superuser. */
  admin: Login;
  /** What OpenBao's database plugin connects with (`{{username}}`/`{{password}}` templated). */
  connectionUrl: string;
  /** Runs `sql` with psql as `as` (default the superuser) on database `postgres`; resolves
   *  with the rows (unaligned, tuples only); rejects with psql's error text. */
  psql(sql: string, as?: Login): Promise<string>;
  /** The login roles that exist, without the superuser and PostgreSQL's own. */
  roles(): Promise<string[]>;
  stop(): Promise<void>;
}

function userIds(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/** Starts a server and registers its stop on `t.teardown`. */
export async function startPostgres(t: Teardown): Promise<PostgresServer> {
  if (!existsSync(join(BIN, 'postgres'))) throw new Error(`no PostgreSQL at ${BIN}: run test/platform/backends/postgresql-install.sh (npm run platform:build)`);
  const ids = userIds();
  const dir = await mkdtemp(join(tmpdir(), 'esi-pg-'));
  const data = join(dir, 'data');
  const admin: Login = { user: 'esi', password: randomBytes(12).toString('hex') };
  writeFileSync(join(dir, 'pw'), admin.password, { mode: 0o600 });
  if (ids) {
    chownSync(dir, ids.uid, ids.gid);
    chownSync(join(dir, 'pw'), ids.uid, ids.gid);
  }
  // As root, run as `postgres`: setpriv execs the binary (the pid stays the server's).
  const as = (bin: string, args: string[]): [string, string[]] =>
    ids ? ['setpriv', [`--reuid=${ids.uid}`, `--regid=${ids.gid}`, '--clear-groups', join(BIN, bin), ...args]] : [join(BIN, bin), args];
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
  const [initCmd, initArgs] = as('initdb', ['-D', data, '-U', admin.user, `--pwfile=${join(dir, 'pw')}`, '--auth-local=scram-sha-256', '--auth-host=scram-sha-256', '-E', 'UTF8', '--no-sync']);
  await run(initCmd, initArgs, { env, cwd: dir, timeout: 120_000 });
  const port = await freePort();
  const [cmd, args] = as('postgres', ['-D', data, '-h', '127.0.0.1', '-p', String(port), '-k', dir, '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']);
  const proc = spawnBounded(cmd, args, { env, cwd: dir, stopSignal: 'SIGINT' });
  const stop = async () => {
    await proc.stop();
    await rm(dir, { recursive: true, force: true });
  };
  t.teardown(stop);

  const psql = async (sql: string, login: Login = admin): Promise<string> => {
    try {
      const { stdout } = await run('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', login.user, '-d', 'postgres', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql], {
        env: { ...env, PGPASSWORD: login.password, PGCONNECT_TIMEOUT: '10' }, timeout: 30_000,
      });
      return stdout.trim();
    } catch (err) {
      throw new Error(`psql as ${login.user}: ${((err as { stderr?: string }).stderr ?? (err as Error).message).trim()}`, { cause: err });
    }
  };
  await waitUntilReady(proc, 'PostgreSQL', async () => (await psql('SELECT 1')) === '1');
  return {
    host: '127.0.0.1', port, admin,
    connectionUrl: `postgresql://{{username}}:{{password}}@127.0.0.1:${port}/postgres?sslmode=disable`,
    psql,
    roles: async () => (await psql(`SELECT rolname FROM pg_roles WHERE rolcanlogin AND rolname <> '${admin.user}' ORDER BY rolname`)).split('\n').filter(Boolean),
    stop,
  };
}

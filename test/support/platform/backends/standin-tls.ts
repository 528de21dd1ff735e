// TLS material for the Azure stand-ins (see lowkey-vault.ts): a throwaway CA made with
// openssl for each start, a server certificate for 127.0.0.1 signed by it, and
// self-signed client certificates for certificate client credentials.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TestTls {
  dir: string;
  caPem: string;
  caFile: string;
  certPem: string;
  keyPem: string;
}

export async function openssl(dir: string, args: string[]): Promise<void> {
  try {
    await run('openssl', args, { cwd: dir });
  } catch (err) {
    throw new Error(`openssl ${args[0]} failed (is openssl installed?): ${(err as Error).message}`, { cause: err });
  }
}

/** A throwaway CA and a server certificate for 127.0.0.1/localhost signed by it. */
export async function makeTestTls(): Promise<TestTls> {
  const dir = await mkdtemp(join(tmpdir(), 'esi-azurekv-tls-'));
  await writeFile(join(dir, 'server.ext'), [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '',
  ].join('\n'));
  await openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key',
    '-out', 'ca.crt', '-days', '2', '-subj', '/CN=ESI azurekv test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  await openssl(dir, ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'server.key',
    '-out', 'server.csr', '-subj', '/CN=127.0.0.1']);
  await openssl(dir, ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', `0x${randomBytes(8).toString('hex')}`,
    '-out', 'server.crt', '-days', '2', '-extfile', 'server.ext']);
  return {
    dir,
    caPem: await readFile(join(dir, 'ca.crt'), 'utf8'),
    caFile: join(dir, 'ca.crt'),
    certPem: await readFile(join(dir, 'server.crt'), 'utf8'),
    keyPem: await readFile(join(dir, 'server.key'), 'utf8'),
  };
}

/** A self-signed RSA certificate + key (one PEM) for certificate client credentials. */
export async function makeClientCertificate(cn: string): Promise<{ pem: string; certPem: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'esi-azurekv-client-'));
  try {
    await openssl(dir, ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'c.key', '-out', 'c.crt', '-days', '2', '-subj', `/CN=${cn}`]);
    const certPem = await readFile(join(dir, 'c.crt'), 'utf8');
    return { pem: `${certPem}${await readFile(join(dir, 'c.key'), 'utf8')}`, certPem };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

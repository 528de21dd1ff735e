// Throwaway certificates for trying the plugin locally and for ESI's tests: a CA, a
// serving certificate for the plugin, and a client certificate for ESI (mTLS). Keys are
// generated on each run (ECDSA P-256) and never committed. In a cluster, issue these with
// cert-manager or your PKI instead.
//
//   npx tsx examples/grpc-plugin/dev-certs.ts OUT_DIR [host ...]
//
// writes OUT_DIR/ca.crt, OUT_DIR/server.crt, OUT_DIR/server.key (for the plugin) and
// OUT_DIR/tls.crt, OUT_DIR/tls.key (ESI's client certificate: with ca.crt, the three keys
// of the Secret that `tlsSecretRef` names).
import { mkdir, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { generate } from 'selfsigned';

export interface Pem {
  cert: string;
  key: string;
}

export interface DevPki {
  ca: Pem;
  server: Pem;
  client: Pem;
}

const SIGNING = { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' } as const;
const DAY = 24 * 3600 * 1000;

const nl = (pem: string) => (pem.endsWith('\n') ? pem : `${pem}\n`);

function validity(days: number): { notBeforeDate: Date; notAfterDate: Date } {
  const now = Date.now();
  return { notBeforeDate: new Date(now - 5 * 60_000), notAfterDate: new Date(now + days * DAY) };
}

export async function generateCa(cn = 'esi-grpc-plugin-dev-ca', days = 30): Promise<Pem> {
  const r = await generate([{ name: 'commonName', value: cn }], {
    ...SIGNING,
    ...validity(days),
    extensions: [
      { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: nl(r.cert), key: nl(r.private) };
}

/** A leaf certificate signed by `ca`: a serving certificate for `hosts` (DNS names or
 *  IPs), or a client certificate (extKeyUsage clientAuth) with common name `cn`. */
export async function issue(ca: Pem, kind: 'server' | 'client', cn: string, hosts: string[] = [], days = 30): Promise<Pem> {
  const altNames = hosts.map((h) => (isIP(h) ? { type: 7 as const, ip: h } : { type: 2 as const, value: h }));
  const r = await generate([{ name: 'commonName', value: cn }], {
    ...SIGNING,
    ...validity(days),
    ca: { cert: ca.cert, key: ca.key },
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      kind === 'server' ? { name: 'extKeyUsage', serverAuth: true } : { name: 'extKeyUsage', clientAuth: true },
      ...(altNames.length ? [{ name: 'subjectAltName' as const, altNames }] : []),
    ],
  });
  return { cert: nl(r.cert), key: nl(r.private) };
}

/** A CA, a serving certificate for `hosts` and a client certificate, all from one CA. */
export async function generateDevPki(hosts: string[] = ['127.0.0.1', 'localhost'], clientCn = 'esi'): Promise<DevPki> {
  const ca = await generateCa();
  const [server, client] = await Promise.all([issue(ca, 'server', hosts[0] ?? 'localhost', hosts), issue(ca, 'client', clientCn)]);
  return { ca, server, client };
}

async function main(argv: string[]): Promise<void> {
  const [out, ...hosts] = argv;
  if (!out) throw new Error('usage: dev-certs.ts OUT_DIR [host ...]');
  const pki = await generateDevPki(hosts.length ? hosts : undefined);
  await mkdir(out, { recursive: true, mode: 0o700 });
  const files: [string, string][] = [
    ['ca.crt', pki.ca.cert], ['server.crt', pki.server.cert], ['server.key', pki.server.key],
    ['tls.crt', pki.client.cert], ['tls.key', pki.client.key],
  ];
  for (const [name, pem] of files) await writeFile(join(out, name), pem, { mode: name.endsWith('.key') ? 0o600 : 0o644 });
  process.stdout.write(`wrote ${files.map(([n]) => n).join(', ')} to ${out}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  });
}

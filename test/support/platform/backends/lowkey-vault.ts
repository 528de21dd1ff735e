// The Azure Key Vault backend of the azurekv tests, on 127.0.0.1 and free ports.
//
// Which vault runs:
//  - lowkey-vault (nagyesta's Key Vault API test double, an executable Spring Boot jar)
//    when lowkey-vault-install.sh could fetch it, or ESI_LOWKEY_VAULT_JAR names one. The
//    Maven Central reachable from this machine does not carry lowkey-vault-app, so here
//    that path has never run: it is written from lowkey-vault's documentation (Spring
//    Boot `server.*` options, `--LOWKEY_VAULT_NAMES`, its PKCS#12 keystore options).
//    lowkey-vault accepts any bearer token, so `enforcesAuth` is false with it;
//  - otherwise ESI's stand-in below: an HTTPS server of the Key Vault *secrets* REST API
//    as Microsoft documents it (secret bundles and ids, versions, tags, paging with
//    nextLink, soft delete with the deleted-secret endpoints and purge, the 401 bearer
//    challenge, 403 by access policy, 404/409 error bodies). It is a test double written
//    here, not Microsoft's service: GAPS lists what it does not model.
//
// In both cases the tokens come from a local stand-in of the Entra ID token endpoint
// (`authorityHost`, HTTPS: OpenID configuration + `/oauth2/v2.0/token` with client
// secrets, certificate assertions (RS256/PS256 checked against the registered
// certificate) and federated credentials: a Kubernetes service-account token verified
// against the real apiserver's JWKS, issuer, subject and audience, as Entra ID verifies a
// federated identity credential) and of IMDS (`imdsHost`, HTTP, the managed-identity
// token endpoint). No real Entra ID exists locally: these exist so the SDK's real token
// flows run end to end, and record what they received for the tests to assert on.
//
// TLS: a CA made for each start (openssl) signs the servers' certificates for 127.0.0.1;
// clients trust it explicitly (the provider through ESI_AZUREKV_CA_FILE).
// The stand-in runs in the test process (it stops with it); lowkey-vault runs as a child
// process under coreutils `timeout`, so it stops by itself if the test process dies.
//
// This module is the entry point: the vault stand-in is in keyvault-standin.ts, the
// token endpoint and IMDS stand-ins in entra-standin.ts, the TLS material in
// standin-tls.ts and small HTTP helpers in standin-http.ts.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../processes.js';
import {
  ALL_PERMISSIONS, Directory, entraRoute, imdsRoute,
  type FederatedCredential, type Permission, type ServicePrincipal, type TokenRequestRecord,
} from './entra-standin.js';
import { VaultStandIn } from './keyvault-standin.js';
import { close, listen, send } from './standin-http.js';
import { makeTestTls, openssl, type TestTls } from './standin-tls.js';

export {
  ALL_PERMISSIONS, KEY_VAULT_RESOURCE,
  type FederatedCredential, type Permission, type ServicePrincipal, type TokenRequestRecord,
} from './entra-standin.js';
export { GAPS } from './keyvault-standin.js';
export { makeClientCertificate, makeTestTls, type TestTls } from './standin-tls.js';

const HERE = join(import.meta.dirname, '..', '..', '..', 'platform', 'backends');

export interface KeyVaultBackend {
  impl: 'lowkey-vault' | 'stand-in';
  /** For test names: e.g. "lowkey-vault 7.1.13" or "ESI Key Vault API stand-in". */
  label: string;
  /** `https://127.0.0.1:<port>` */
  vaultUrl: string;
  tenantId: string;
  /** Whether the vault checks tokens and access policies (lowkey-vault does not). */
  enforcesAuth: boolean;
  caPem: string;
  caFile: string;
  /** `https://127.0.0.1:<port>`: the token endpoint stand-in (AZURE_AUTHORITY_HOST). */
  authorityHost: string;
  /** `http://127.0.0.1:<port>`: the IMDS stand-in (AZURE_POD_IDENTITY_AUTHORITY_HOST). */
  imdsHost: string;
  /** A service principal allowed everything, for seeding. */
  admin: Required<Pick<ServicePrincipal, 'clientId' | 'secret'>>;
  addServicePrincipal(sp: ServicePrincipal, permissions: Permission[]): void;
  /** Registers a managed identity (the first one is the system-assigned one). */
  addManagedIdentity(clientId: string, permissions: Permission[]): void;
  addFederatedCredential(fc: FederatedCredential, permissions: Permission[]): void;
  /** Environment the provider needs to reach this backend (trust, allowed host, authority). */
  env(): Record<string, string>;
  tokenRequests: TokenRequestRecord[];
  /** Number of Key Vault data-plane requests served so far (for no-value-read checks). */
  requests(): { method: string; path: string; status: number }[];
  stop(): Promise<void>;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

// ---------------------------------------------------------------- lowkey-vault (real, when available)

function pinnedLowkeyVersion(): string {
  const m = /^LOWKEY_VAULT_VERSION=(\S+)$/m.exec(readFileSync(join(HERE, 'lowkey-vault-install.sh'), 'utf8'));
  if (!m?.[1]) throw new Error('lowkey-vault-install.sh does not pin LOWKEY_VAULT_VERSION');
  return m[1];
}

/** The lowkey-vault jar to run, if there is one (ESI_LOWKEY_VAULT_JAR or the install cache). */
export function lowkeyVaultJar(): { path: string; version: string } | undefined {
  if (process.env.ESI_LOWKEY_VAULT_JAR) return { path: process.env.ESI_LOWKEY_VAULT_JAR, version: 'ESI_LOWKEY_VAULT_JAR' };
  const version = pinnedLowkeyVersion();
  const path = join(process.env.ESI_CACHE ?? join(homedir(), '.cache', 'esi'), 'lowkey-vault', `lowkey-vault-app-${version}.jar`);
  return existsSync(path) ? { path, version } : undefined;
}

/** The newest JDK under /usr/lib/jvm (lowkey-vault 7.x is built for Java 25), or `java`. */
function javaBinary(): string {
  if (process.env.ESI_LOWKEY_JAVA) return process.env.ESI_LOWKEY_JAVA;
  try {
    const jdks = readdirSync('/usr/lib/jvm')
      .map((d) => ({ d, major: Number(/(\d+)/.exec(d)?.[1] ?? 0) }))
      .filter(({ d }) => existsSync(join('/usr/lib/jvm', d, 'bin', 'java')))
      .sort((a, b) => b.major - a.major);
    if (jdks[0]) return join('/usr/lib/jvm', jdks[0].d, 'bin', 'java');
  } catch {
    // No /usr/lib/jvm: fall back to PATH.
  }
  return 'java';
}

function httpsAnswers(url: string, ca: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpsRequest(url, { ca, timeout: 2000 }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

async function startLowkeyVault(jar: { path: string; version: string }, tls: TestTls): Promise<{ url: string; stop: () => Promise<void> }> {
  // lowkey-vault serves TLS from a PKCS#12 keystore: ours, so the CA is known.
  await openssl(tls.dir, ['pkcs12', '-export', '-in', 'server.crt', '-inkey', 'server.key', '-out', 'server.p12', '-passout', 'pass:changeit', '-name', 'lowkey-vault']);
  const port = await freePort();
  const log = join(tls.dir, 'lowkey-vault.log');
  const { openSync } = await import('node:fs');
  const out = openSync(log, 'a');
  const child = spawn('timeout', ['1200', javaBinary(), '-Xmx256m', '-jar', jar.path,
    '--server.address=127.0.0.1', `--server.port=${port}`,
    `--server.ssl.key-store=${join(tls.dir, 'server.p12')}`, '--server.ssl.key-store-type=PKCS12', '--server.ssl.key-store-password=changeit',
    // The default vaults are auto-registered (https://127.0.0.1:<port> among them). The
    // challenge's resource is set to Key Vault's, as the token endpoint stand-in and the
    // provider expect. Untested here: lowkey-vault's challenge must also name a tenant
    // the credential accepts (its documentation does not say which it sends).
    '--LOWKEY_AUTH_RESOURCE=vault.azure.net',
  ], { stdio: ['ignore', out, out] });
  const url = `https://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  while (!(await httpsAnswers(`${url}/ping`, tls.caPem))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`lowkey-vault did not start (see ${log}): ${readFileSync(log, 'utf8').slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// ---------------------------------------------------------------- start

export interface StartOptions {
  /** Listing page size of the stand-in (Azure's is 25; smaller exercises nextLink). */
  pageSize?: number;
  /** Purge protection on the stand-in vault (purge is then refused with 403). */
  purgeProtection?: boolean;
  /** Use the stand-in even when a lowkey-vault jar is available. */
  forceStandIn?: boolean;
}

/** Starts the vault (lowkey-vault when available, else the stand-in) with the token
 *  endpoint and IMDS stand-ins; stops everything on teardown. */
export async function startKeyVault(t: Teardown, opts: StartOptions = {}): Promise<KeyVaultBackend> {
  const tls = await makeTestTls();
  const tenantId = randomUUID();
  const dir = new Directory(tenantId);
  const stops: (() => Promise<void>)[] = [() => rm(tls.dir, { recursive: true, force: true })];
  const stopAll = async () => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  t.teardown(stopAll);

  let authorityHost = '';
  const sts = createHttpsServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    entraRoute(dir, authorityHost, req, res).catch(() => send(res, 500, { error: 'server_error' }));
  });
  authorityHost = `https://127.0.0.1:${await listen(sts)}`;
  stops.push(() => close(sts));
  const imds = createHttpServer((req, res) => imdsRoute(dir, req, res));
  const imdsHost = `http://127.0.0.1:${await listen(imds)}`;
  stops.push(() => close(imds));

  const jar = opts.forceStandIn ? undefined : lowkeyVaultJar();
  let vaultUrl: string;
  let label: string;
  let standIn: VaultStandIn | undefined;
  if (jar) {
    const lk = await startLowkeyVault(jar, tls);
    stops.push(lk.stop);
    vaultUrl = lk.url;
    label = `lowkey-vault ${jar.version}`;
  } else {
    let base = '';
    standIn = new VaultStandIn(dir, () => base, () => authorityHost, { pageSize: opts.pageSize ?? 25, purgeProtection: opts.purgeProtection ?? false });
    const vault = createHttpsServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
      standIn!.handle(req, res).catch(() => send(res, 500, { error: { code: 'InternalServerError', message: 'stand-in failure' } }));
    });
    base = `https://127.0.0.1:${await listen(vault)}`;
    stops.push(() => close(vault));
    vaultUrl = base;
    label = 'ESI Key Vault API stand-in';
  }

  const grant = (clientId: string, permissions: Permission[]) => dir.identities.set(clientId, { permissions: new Set(permissions) });
  const admin = { clientId: randomUUID(), secret: randomBytes(24).toString('base64url') };
  dir.sps.set(admin.clientId, admin);
  grant(admin.clientId, ALL_PERMISSIONS);
  return {
    impl: jar ? 'lowkey-vault' : 'stand-in',
    label,
    vaultUrl,
    tenantId,
    enforcesAuth: !jar,
    caPem: tls.caPem,
    caFile: tls.caFile,
    authorityHost,
    imdsHost,
    admin,
    addServicePrincipal: (sp, permissions) => {
      dir.sps.set(sp.clientId, sp);
      grant(sp.clientId, permissions);
    },
    addManagedIdentity: (clientId, permissions) => {
      dir.mis.push(clientId);
      grant(clientId, permissions);
    },
    addFederatedCredential: (fc, permissions) => {
      dir.federated.set(fc.clientId, fc);
      grant(fc.clientId, permissions);
    },
    env: () => ({
      ESI_AZUREKV_CA_FILE: tls.caFile,
      ESI_AZUREKV_ALLOWED_VAULT_HOSTS: '127.0.0.1',
      AZURE_AUTHORITY_HOST: authorityHost,
      AZURE_POD_IDENTITY_AUTHORITY_HOST: imdsHost,
    }),
    tokenRequests: dir.records,
    requests: () => standIn?.log ?? [],
    stop: stopAll,
  };
}

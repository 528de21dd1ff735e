// One way out (SECURITY.md, "The controller's network boundary"): every provider whose spec
// names an address dials it through src/egress/, so the reconciler's policy holds for all of
// them. For each such provider a spec is aimed at a loopback listener, spelled several ways,
// under the strict policy a tenant's SecretStore gets: the client is refused with the policy's
// message and the listener sees no connection. Then the same spec with the operator's
// allow-list naming that address does reach it. Providers whose spec cannot choose an
// address are listed with the reason; a provider in neither list fails the test. The lint
// rule (eslint.config.js, EGRESS_PATHS) is shown firing where a product file would dial by
// itself, and the tree is shown clean.
import { ESLint } from 'eslint';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { generateCa } from '../../../certs/pki.js';
import { parseAllowList, type AddressPolicy } from '../../../src/egress/policy.js';
import { loadProvider, providerNames } from '../../../src/providers/registry.js';
import { ProviderError } from '../../../src/providers/types.js';
import { testContext } from '../../support/provider-context.js';

const root = join(import.meta.dirname, '..', '..', '..');

/** A TCP listener that counts connections and answers nothing useful. */
async function listener(t: Test): Promise<{ port: number; connections: () => number }> {
  let n = 0;
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    n++;
    sockets.add(s);
    s.on('error', () => undefined);
    s.end('HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { port: (server.address() as { port: number }).port, connections: () => n };
}

const ca = Buffer.from((await generateCa(Date.now(), 3_600_000)).certPem).toString('base64');
// Any credential a spec names reads as a plausible value (akeyless's access type must be one).
const credentials: Record<string, string> = new Proxy({}, { get: (_t, key) => (key === 'ak/type' ? 'api_key' : 'credential-value') });

/** A valid spec of each provider whose spec names an address, aimed at `host:port`. */
const AIMED: Record<string, (hp: string) => object> = {
  vault: (hp) => ({ server: `http://${hp}`, path: 'secret', version: 'v2', auth: { tokenSecretRef: { name: 'vault', key: 'token' } } }),
  openBao: (hp) => ({ server: `http://${hp}`, path: 'secret', version: 'v2', auth: { tokenSecretRef: { name: 'vault', key: 'token' } } }),
  kubernetes: (hp) => ({ server: { url: `https://${hp}`, caBundle: ca }, remoteNamespace: 'default', auth: { token: { bearerToken: { name: 'kube', key: 'token' } } } }),
  grpc: (hp) => ({ url: `http://${hp}` }),
  webhook: (hp) => ({ url: `http://${hp}/get?key={{ .remoteRef.key }}`, result: { jsonPath: '$' } }),
  onepassword: (hp) => ({ connectHost: `http://${hp}`, vaults: { staging: 1 }, auth: { secretRef: { connectTokenSecretRef: { name: 'op', key: 'token' } } } }),
  bitwardensecretsmanager: (hp) => ({
    apiURL: 'https://api.bitwarden.com', identityURL: 'https://identity.bitwarden.com', bitwardenServerSDKURL: `https://${hp}`, caBundle: ca,
    organizationID: '11111111-1111-4111-8111-111111111111', projectID: '22222222-2222-4222-8222-222222222222',
    auth: { secretRef: { credentials: { name: 'bw', key: 'token' } } },
  }),
  infisical: (hp) => ({
    auth: { universalAuthCredentials: { clientId: { key: 'id', name: 'inf' }, clientSecret: { key: 'secret', name: 'inf' } } },
    secretsScope: { projectSlug: 'p', environmentSlug: 'dev' }, hostAPI: `http://${hp}/api`,
  }),
  akeyless: (hp) => ({
    akeylessGWApiURL: `http://${hp}`,
    authSecretRef: { secretRef: { accessID: { name: 'ak', key: 'id' }, accessType: { name: 'ak', key: 'type' }, accessTypeParam: { name: 'ak', key: 'param' } } },
  }),
  conjur: (hp) => ({ url: `http://${hp}`, auth: { apikey: { account: 'conjur', userRef: { name: 'c', key: 'user' }, apiKeyRef: { name: 'c', key: 'key' } } } }),
};

/** Providers whose spec cannot choose the address dialled, and why. */
const NO_SPEC_ADDRESS: Record<string, string> = {
  fake: 'no connection at all',
  aws: 'aws.region (a checked region name) picks AWS\'s regional endpoint; endpoint overrides come from the operator\'s environment only',
  gcpsm: 'gcpsm.location (a checked region name) picks Google\'s endpoint; the emulator address comes from the operator\'s environment only',
  azurekv: 'azurekv.vaultUrl must be a Key Vault host (*.vault.azure.net and the sovereign suffixes) or a host the operator allowed (ESI_AZUREKV_ALLOWED_VAULT_HOSTS)',
  doppler: 'the host is Doppler\'s or the operator\'s DOPPLER_BASE_URL, never the spec\'s',
};

const STRICT: AddressPolicy = { privateAddresses: false, privateHint: 'OPEN-IT-WITH-THE-FLAG' };

t.test('every provider is either aimed here or says why its spec names no address', async (t) => {
  for (const name of providerNames()) {
    t.ok(AIMED[name] ?? NO_SPEC_ADDRESS[name], `${name} is covered`);
  }
});

/** Builds the client and makes one call; the ProviderError it fails with, or undefined. */
async function attempt(name: string, spec: object, addresses?: AddressPolicy): Promise<ProviderError | undefined> {
  const provider = await loadProvider(name);
  const ctx = { ...testContext({ storeId: `SecretStore/team/${name}`, spec, credentials, timeoutMs: 3000 }), ...(addresses ? { addresses } : {}) };
  try {
    const client = await provider.newClient(ctx);
    try {
      await client.validate?.();
      await client.getSecret({ key: 'db' });
    } finally {
      await client.close();
    }
  } catch (err) {
    if (err instanceof ProviderError) return err;
    throw err;
  }
  return undefined;
}

for (const [name, aim] of Object.entries(AIMED)) {
  t.test(`${name}: refused at every spelling of loopback, reached once the operator opens it`, async (t) => {
    const l = await listener(t);
    for (const host of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '0x7f.1']) {
      const spec = aim(`${host}:${l.port}`);
      // A spelling a provider's own URL rule refuses first is refused all the same.
      const e = await attempt(name, spec, STRICT);
      t.ok(e, `${name} at ${host}: refused`);
      if (e?.code !== 'InvalidSpec') t.match(e?.message, /loopback or private address; OPEN-IT-WITH-THE-FLAG/, `${name} at ${host}: the policy's reason`);
      t.equal(l.connections(), 0, `${name} at ${host}: no connection reached the listener`);
    }
    const opened = { ...STRICT, allow: parseAllowList(['127.0.0.1']) };
    const e = await attempt(name, aim(`127.0.0.1:${l.port}`), opened);
    t.notMatch(e?.message ?? '', /loopback or private address/, `${name}: not refused by the policy once opened (${e?.code})`);
    t.ok(l.connections() > 0, `${name}: the opened address was dialled`);
  });
}

t.test('a metadata address stays refused whatever the operator opens', async (t) => {
  const opened: AddressPolicy = { privateAddresses: true, allow: parseAllowList(['169.254.0.0/16', '0.0.0.0/0']) };
  for (const name of ['vault', 'grpc', 'webhook']) {
    const e = await attempt(name, AIMED[name]!('169.254.169.254:80'), opened);
    t.match(e?.message, /link-local or cloud metadata address/, name);
  }
});

t.test('the lint refuses a product file that dials by itself', async (t) => {
  const eslint = new ESLint({ cwd: root });
  const messages = async (file: string, code: string) =>
    (await eslint.lintText(code, { filePath: join(root, file) }))[0]!.messages.filter((m) => /src\/egress/.test(m.message)).length;
  const samples = [
    "import https from 'node:https';\nexport const r = https.request;",
    "import { request } from 'node:http';\nexport const r = request;",
    "import { connect } from 'node:tls';\nexport const c = connect;",
    "import { Socket } from 'node:net';\nexport const s = new Socket();",
    "import { Client } from '@grpc/grpc-js';\nexport const c = Client;",
    "import { request } from 'undici';\nexport const r = request;",
    'export const f = () => fetch(\'http://127.0.0.1\');',
  ];
  for (const code of samples) {
    t.equal(await messages('src/providers/example/index.ts', code), 1, `refused in a provider: ${code.split('\n')[0]}`);
    t.equal(await messages('src/controller/example.ts', code), 1, `refused in the reconciler: ${code.split('\n')[0]}`);
    t.equal(await messages('src/egress/example.ts', code), 0, `allowed in src/egress: ${code.split('\n')[0]}`);
  }
  t.equal(await messages('src/providers/example/index.ts', "import type { Agent } from 'node:http';\nexport type A = Agent;"), 0, 'type imports are fine');
  t.equal(await messages('src/controller/example.ts', "import { createServer } from 'node:http';\nexport const s = createServer;"), 0, 'servers are fine');
  const tree = await eslint.lintFiles(['src/**/*.ts', 'webhook/**/*.ts', 'injector/**/*.ts', 'certs/**/*.ts']);
  t.same(tree.flatMap((r) => r.messages.filter((m) => /src\/egress/.test(m.message)).map((m) => `${r.filePath}: ${m.message}`)), [], 'the tree dials only through src/egress');
});

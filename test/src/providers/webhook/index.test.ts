// The webhook provider against real HTTP(S) servers on 127.0.0.1: ESO's documented store
// (an httpbin-like echo), POST bodies, maps, TLS with caBundle/caProvider, the bounds
// (size, deadline, redirects) and the address policy; no value in any error.
import t from 'tap';
import { generateCa, issueServingCert } from '../../../../certs/pki.js';
import { addressProblem } from '../../../../src/egress/policy.js';
import { provider } from '../../../../src/providers/webhook/index.js';
import { meta } from '../../../../src/providers/webhook/meta.js';
import type { AddressPolicy } from '../../../../src/egress/policy.js';
import type { SecretsClient } from '../../../../src/providers/types.js';
import { testContext, providerError } from '../../../support/provider-context.js';
import { json, serve } from '../../../support/standins/http.js';

const CANARY = 'CANARY-webhook-7f3a91';
const STORE = 'SecretStore/team-a/webhook';
const creds = { 'webhook-credentials/username': 'test', 'webhook-credentials/password': CANARY };
const dec = (b: Uint8Array) => Buffer.from(b).toString('utf8');

async function client(spec: object, opts: { addresses?: AddressPolicy; timeoutMs?: number; credentials?: Record<string, string> } = {}): Promise<SecretsClient> {
  const ctx = { ...testContext({ storeId: STORE, spec, namespace: 'team-a', credentials: opts.credentials ?? creds, timeoutMs: opts.timeoutMs ?? 5000 }), ...(opts.addresses ? { addresses: opts.addresses } : {}) };
  return provider.newClient(ctx);
}

const failure = providerError;

/** ESO's documented store (docs: provider/webhook), pointed at the stand-in. */
const esoSpec = (url: string) => ({
  url: `${url}/get?parameter={{ .remoteRef.key }}`,
  result: { jsonPath: '$.args.parameter' },
  headers: { 'Content-Type': 'application/json', Authorization: 'Basic {{ print .auth.username ":" .auth.password | b64enc }}' },
  secrets: [{ name: 'auth', secretRef: { name: 'webhook-credentials' } }],
});

/** httpbin's /get: the query arguments back as JSON. */
const httpbin = (req: { url?: string }, res: Parameters<typeof json>[0]) => {
  const u = new URL(req.url!, 'http://x');
  json(res, 200, { args: Object.fromEntries(u.searchParams), url: req.url });
};

t.test("ESO's documented webhook store: the key in the URL, basic auth from the Secret, the value at result.jsonPath", async (t) => {
  const srv = await serve(t, httpbin);
  const c = await client(esoSpec(srv.url));
  t.equal(dec(await c.getSecret({ key: 'secret' })), 'secret');
  t.equal(srv.seen[0]!.method, 'GET');
  t.equal(srv.seen[0]!.headers.authorization, `Basic ${Buffer.from(`test:${CANARY}`).toString('base64')}`);
  t.equal(srv.seen[0]!.headers['content-type'], 'application/json');
  // remoteRef fields are URL-escaped in the url: a key cannot add query parameters.
  t.equal(dec(await c.getSecret({ key: 'a b&admin=1' })), 'a b&admin=1');
  t.equal(srv.seen[1]!.url, '/get?parameter=a+b%26admin%3D1');
  await c.validate();
  t.equal(srv.seen.length, 2, 'validate sends no request');
});

t.test('POST with a templated body; maps; JSON nodes; a string holding JSON', async (t) => {
  const srv = await serve(t, (req, res, body) => {
    const sent = JSON.parse(body || '{}') as { name?: string; version?: string };
    if (req.url === '/nested') return json(res, 200, { data: { db: { user: 'app', port: 5432, tags: ['a'] }, raw: JSON.stringify({ k: 'v' }) } });
    json(res, 200, { value: `${sent.name}@${sent.version}` });
  });
  const post = await client({ url: `${srv.url}/lookup`, method: 'POST', body: '{"name":"{{ .remoteRef.key }}","version":"{{ .remoteRef.version }}"}', result: { jsonPath: '$.value' } });
  t.equal(dec(await post.getSecret({ key: 'db pass', version: '3' })), 'db pass@3', 'the body gets the raw (unescaped) remoteRef');
  t.equal(srv.seen[0]!.method, 'POST');
  const nested = await client({ url: `${srv.url}/nested`, result: { jsonPath: '$.data.db' } });
  t.equal(dec(await nested.getSecret({ key: 'x' })), '{"user":"app","port":5432,"tags":["a"]}', 'an object node is JSON');
  const map = await nested.getSecretMap({ key: 'x' });
  t.same(Object.fromEntries(Object.entries(map).map(([k, v]) => [k, dec(v)])), { user: 'app', port: '5432', tags: '["a"]' });
  const raw = await client({ url: `${srv.url}/nested`, result: { jsonPath: "$['data']['raw']" } });
  t.same(Object.keys(await raw.getSecretMap({ key: 'x' })), ['k'], 'a string node is read as JSON for dataFrom');
  const whole = await client({ url: `${srv.url}/nested` });
  t.match(dec(await whole.getSecret({ key: 'x' })), /^\{"data":/, 'without jsonPath: the whole answer');
  t.equal((await failure(nested.getSecret({ key: 'x', metadataPolicy: 'Fetch' }))).code, 'Unsupported');
  t.equal((await failure(nested.getAllSecrets({ name: { regexp: '.*' } }))).code, 'Unsupported');
  t.equal((await failure(nested.pushSecret(new Uint8Array(), { remoteKey: 'x' }))).code, 'Unsupported');
});

t.test('failures carry the status, never the answer or a credential', async (t) => {
  const srv = await serve(t, (req, res) => {
    if (req.url!.startsWith('/get?parameter=gone')) return json(res, 404, { error: CANARY });
    if (req.url!.startsWith('/get?parameter=denied')) return json(res, 401, { error: CANARY });
    if (req.url!.startsWith('/get?parameter=moved')) return void res.writeHead(302, { Location: 'http://169.254.169.254/' }).end();
    if (req.url!.startsWith('/get?parameter=bad')) return void res.writeHead(200).end(`not json ${CANARY}`);
    json(res, 200, { args: {} });
  });
  const c = await client(esoSpec(srv.url));
  const cases: [string, string][] = [['gone', 'NotFound'], ['denied', 'AuthFailed'], ['moved', 'Unknown'], ['bad', 'Unknown'], ['empty', 'NotFound']];
  for (const [key, code] of cases) {
    const e = await failure(c.getSecret({ key }));
    t.equal(e.code, code, `${key}: ${e.message}`);
    t.notMatch(e.message, CANARY);
    t.notMatch(JSON.stringify(e), CANARY);
  }
  t.equal(srv.seen.filter((s) => s.url === '/').length, 0, 'a redirect is not followed');
  const missing = await client(esoSpec(srv.url), { credentials: { 'webhook-credentials/username': 'test' } });
  t.equal((await failure(missing.getSecret({ key: 'k' }))).code, 'AuthFailed', 'a missing credential key');
});

t.test('bounds: an answer over the size cap, a server that never finishes, webhook.timeout', async (t) => {
  const srv = await serve(t, (req, res) => {
    if (req.url === '/big') {
      res.writeHead(200);
      const chunk = Buffer.alloc(1024 * 1024, 'a');
      for (let i = 0; i < 6; i++) res.write(chunk);
      return void res.end();
    }
    res.writeHead(200);
    res.write('{"partial":');
  });
  const big = await failure((await client({ url: `${srv.url}/big` })).getSecret({ key: 'k' }));
  t.match(big.message, /larger than 4194304 bytes/);
  const slow = await failure((await client({ url: `${srv.url}/hang`, timeout: '1s' }, { timeoutMs: 30_000 })).getSecret({ key: 'k' }));
  t.equal(slow.code, 'Timeout', slow.message);
  const caller = new AbortController();
  const pending = (await client({ url: `${srv.url}/hang` }, { timeoutMs: 30_000 })).getSecret({ key: 'k' }, { signal: caller.signal });
  caller.abort();
  t.equal((await failure(pending)).code, 'Timeout', "the caller's deadline stops the call");
});

t.test('TLS: caBundle (base64 or PEM) and caProvider verify the server; no CA = the system roots refuse it', async (t) => {
  const now = Date.now();
  const ca = await generateCa(now, 3600_000);
  const cert = await issueServingCert(ca, { dnsNames: ['localhost'], ips: ['127.0.0.1'] }, now, 3600_000);
  const srv = await serve(t, httpbin, { cert: cert.certPem, key: cert.keyPem });
  const spec = { ...esoSpec(srv.url), caBundle: Buffer.from(ca.certPem).toString('base64') };
  t.equal(dec(await (await client(spec)).getSecret({ key: 'tls' })), 'tls');
  const viaSecret = { ...esoSpec(srv.url), caProvider: { type: 'Secret', name: 'ca', key: 'ca.crt' } };
  t.equal(dec(await (await client(viaSecret, { credentials: { ...creds, 'ca/ca.crt': ca.certPem } })).getSecret({ key: 'tls2' })), 'tls2');
  const e = await failure((await client(esoSpec(srv.url))).getSecret({ key: 'x' }));
  t.equal(e.code, 'Unreachable', e.message);
  t.match(e.message, /TLS/);
});

t.test('the address policy: link-local never; loopback and private only when allowed', async (t) => {
  const srv = await serve(t, httpbin);
  const tenant: AddressPolicy = { privateAddresses: false, privateHint: 'ask the operator for --allow-private-store-addresses' };
  const refused = await failure((await client(esoSpec(srv.url), { addresses: tenant })).getSecret({ key: 'k' }));
  t.equal(refused.code, 'Forbidden');
  t.match(refused.message, /127\.0\.0\.1 is a loopback or private address; ask the operator/);
  t.equal(srv.seen.length, 0, 'nothing was sent');
  t.equal((await failure((await client(esoSpec(srv.url), { addresses: tenant })).validate())).code, 'Forbidden', 'validate checks the address too');
  const allowed = await client(esoSpec(srv.url), { addresses: { privateAddresses: true } });
  t.equal(dec(await allowed.getSecret({ key: 'ok' })), 'ok');
  const metadata = await failure((await client({ url: 'http://169.254.169.254/latest/meta-data/{{ .remoteRef.key }}' }, { addresses: { privateAddresses: true } })).getSecret({ key: 'iam' }));
  t.equal(metadata.code, 'Forbidden');
  t.match(metadata.message, /link-local/);
  const byName = await failure((await client({ url: `http://localhost:${srv.port}/get` }, { addresses: tenant })).getSecret({ key: 'k' }));
  t.equal(byName.code, 'Forbidden', 'a name is judged by the addresses it resolves to');
  for (const [ip, bad] of [['169.254.169.254', true], ['::ffff:169.254.169.254', true], ['fe80::1', true], ['fd00:ec2::254', true], ['10.1.2.3', true], ['::1', true], ['8.8.8.8', false], ['2001:4860::8888', false]] as const) {
    t.equal(addressProblem(ip, { privateAddresses: false }) !== undefined, bad, `${ip} (tenant)`);
  }
  t.equal(addressProblem('10.1.2.3', { privateAddresses: true }), undefined, 'private allowed');
  t.not(addressProblem('169.254.169.254', { privateAddresses: true }), undefined, 'metadata never');
});

t.test('validateSpec names the field; references list only the keys the templates read', async (t) => {
  const problems = (spec: object) => meta.validateSpec(spec).join('\n');
  t.equal(problems(esoSpec('http://x')), '');
  t.match(problems({ url: 'ftp://x' }), /webhook.url must be an http/);
  t.match(problems({ url: 'http://x/{{ if .remoteRef.key }}a{{ end }}' }), /webhook.url: "if": control structures/);
  t.match(problems({ url: 'http://x/{{ .remoteRef.key | sha256sum }}' }), /function "sha256sum" is not supported/);
  t.match(problems({ url: 'http://x/{{ .creds.token }}' }), /\.creds is neither remoteRef nor a name listed in webhook.secrets/);
  t.match(problems({ url: 'http://x', result: { jsonPath: '$..x' } }), /webhook.result.jsonPath: unsupported/);
  t.match(problems({ url: 'http://x', result: { jsonPath: '$.items[?(@.a)]' } }), /webhook.result.jsonPath: unsupported/);
  t.match(problems({ url: 'http://x', timeout: 'soon' }), /webhook.timeout/);
  t.match(problems({ url: 'http://x', method: 'TRACE' }), /webhook.method/);
  t.match(problems({ url: 'http://x', auth: { ntlm: {} } }), /NTLM/);
  t.match(problems({ url: 'http://x', secrets: [{ name: 'remoteRef', secretRef: { name: 's' } }] }), /remoteRef/);
  const refs = meta.references(esoSpec('http://x'));
  t.same(refs.credentials.map((c) => `${c.name}/${c.key}`), ['webhook-credentials/password', 'webhook-credentials/username']);
});

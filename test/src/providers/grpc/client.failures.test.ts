// The grpc provider against ESI's reference plugin (examples/grpc-plugin): what a user
// meets when something is wrong: no or wrong client certificate, an untrusted server
// certificate, plaintext/TLS mix-ups, a plugin that is down, slow, flaky, or registered
// under another path, reply errors, and spec/TLS material validation. The conformance
// suite and the codec are in grpc.test.ts; shared set-up in grpc-fixture.ts.
// Run: `npx tap --before= --after= test/src/providers/grpc/client.failures.test.ts`
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import t from 'tap';
import { MemoryStore, PluginError } from '../../../../examples/grpc-plugin/backend.js';
import { startPluginServer } from '../../../../examples/grpc-plugin/server.js';
import { backoffMs, MAX_ATTEMPTS } from '../../../../src/providers/grpc/client.js';
import { parseReplyError, secretsProtoPath } from '../../../../src/providers/grpc/contract.js';
import { provider } from '../../../../src/providers/grpc/index.js';
import { parseUrl } from '../../../../src/providers/grpc/spec.js';
import { freePort } from '../../../support/platform/processes.js';
import {
  CANARY, caOnly, caught, client, closedPort, otherCa, pki, plugin, strangerClient, type Creds,
} from '../../../support/fixtures/grpc.js';

const tlsPlugin = await plugin();
const mtlsPlugin = await plugin({ mtls: true });

t.test('mTLS: a client without a certificate is refused → AuthFailed', async (tt) => {
  const c = await client('SecretStore/team-a/plugin', `127.0.0.1:${mtlsPlugin.port}`, caOnly);
  tt.teardown(() => c.close());
  const err = await caught(c.getSecret({ key: 'conformance/anything' }));
  tt.equal(err.code, 'AuthFailed');
  tt.match(err.message, /SecretStore\/team-a\/plugin key "conformance\/anything": plugin at 127\.0\.0\.1:\d+ requires a TLS client certificate \(TLS alert "certificate required"\): put tls\.crt and tls\.key in Secret "plugin-tls"/);
  const v = await caught(c.validate());
  tt.equal(v.code, 'AuthFailed', 'validate() reports it too');
});

t.test('mTLS: a client certificate from a CA the plugin does not trust is refused', async (tt) => {
  const c = await client('SecretStore/team-a/plugin', `127.0.0.1:${mtlsPlugin.port}`, {
    ...caOnly, 'plugin-tls/tls.crt': strangerClient.cert, 'plugin-tls/tls.key': strangerClient.key,
  });
  tt.teardown(() => c.close());
  const err = await caught(c.getSecret({ key: 'k' }));
  tt.ok(['AuthFailed', 'Unreachable'].includes(err.code), `code ${err.code}`);
  tt.match(err.message, /tls\.crt in Secret "plugin-tls"/, 'the message points at the client certificate');
});

t.test('TLS: a plugin certificate not signed by ca.crt is a clear TLS error, not retried', async (tt) => {
  const c = await client('SecretStore/team-a/plugin', `127.0.0.1:${tlsPlugin.port}`, { 'plugin-tls/ca.crt': otherCa.cert });
  tt.teardown(() => c.close());
  const started = Date.now();
  const err = await caught(c.getSecret({ key: 'k' }));
  tt.equal(err.code, 'Unreachable');
  tt.match(err.message, /TLS handshake with plugin at 127\.0\.0\.1:\d+ failed: its certificate is not trusted \((unable to verify the first certificate|self-signed certificate in certificate chain)\); ca\.crt in Secret "plugin-tls" must hold the CA/);
  tt.match(err.message, /certificate/);
  tt.ok(Date.now() - started < 1000, 'fails at once (certificate errors are not retried)');
});

t.test('TLS without tlsSecretRef verifies against the system roots (a private CA is refused)', async (tt) => {
  const c = await client('SecretStore/team-a/plugin', `127.0.0.1:${tlsPlugin.port}`, undefined);
  tt.teardown(() => c.close());
  const err = await caught(c.getSecret({ key: 'k' }));
  tt.equal(err.code, 'Unreachable');
  tt.match(err.message, /certificate is not trusted .*set tlsSecretRef to a Secret whose ca\.crt holds the CA/);
});

t.test('plaintext only when the url says http://', async (tt) => {
  const plain = await startPluginServer({ data: { k: 'v' } });
  tt.teardown(() => plain.stop());
  const ok = await client('SecretStore/team-a/plain', `http://127.0.0.1:${plain.port}`, undefined);
  tt.teardown(() => ok.close());
  tt.equal(Buffer.from(await ok.getSecret({ key: 'k' })).toString(), 'v', 'http:// talks plaintext');
  const tlsToPlain = await client('SecretStore/team-a/plain', `127.0.0.1:${plain.port}`, caOnly, 1000);
  tt.teardown(() => tlsToPlain.close());
  const err = await caught(tlsToPlain.getSecret({ key: 'k' }));
  tt.equal(err.code, 'Unreachable', 'host:port means TLS: a plaintext plugin fails the handshake');
  tt.notMatch(err.message, /\bv\b.*\bv\b/);
  const plainToTls = await client('SecretStore/team-a/plain', `http://127.0.0.1:${tlsPlugin.port}`, undefined, 1000);
  tt.teardown(() => plainToTls.close());
  const err2 = await caught(plainToTls.getSecret({ key: 'k' }));
  tt.equal(err2.code, 'Unreachable');
  tt.match(err2.message, /if the plugin serves TLS, write the url as host:port or https:\/\//);
  const problems = provider.validateSpec({ url: `http://127.0.0.1:${plain.port}`, tlsSecretRef: { name: 'plugin-tls' } });
  tt.match(problems.join(), /plaintext \(http:\/\/\) but tlsSecretRef is set/);
});

t.test('plugin down → Unreachable "connection refused", quickly', async (tt) => {
  const port = await closedPort();
  const c = await client('SecretStore/team-a/plugin', `127.0.0.1:${port}`, caOnly);
  tt.teardown(() => c.close());
  const started = Date.now();
  const err = await caught(c.getSecret({ key: 'app/db' }));
  tt.equal(err.code, 'Unreachable');
  tt.equal(err.message, `SecretStore/team-a/plugin key "app/db": plugin at 127.0.0.1:${port} is not reachable: connection refused (${MAX_ATTEMPTS} attempts)`);
  tt.ok(Date.now() - started < 5000, 'bounded retries');
});

t.test('a plugin that stops between calls is reported, and found again when it is back', async (tt) => {
  const port = await freePort();
  let server = await startPluginServer({ listen: `127.0.0.1:${port}`, tls: { cert: pki.server.cert, key: pki.server.key }, data: { k: 'one' } });
  const c = await client('SecretStore/team-a/plugin', `127.0.0.1:${port}`, caOnly, 1000);
  tt.teardown(() => c.close());
  tt.equal(Buffer.from(await c.getSecret({ key: 'k' })).toString(), 'one');
  await server.stop();
  tt.equal((await caught(c.getSecret({ key: 'k' }))).code, 'Unreachable');
  server = await startPluginServer({ listen: `127.0.0.1:${port}`, tls: { cert: pki.server.cert, key: pki.server.key }, data: { k: 'two' } });
  tt.teardown(() => server.stop());
  let value = '';
  for (let i = 0; i < 20 && value !== 'two'; i++) {
    value = await c.getSecret({ key: 'k' }).then((v) => Buffer.from(v).toString(), () => '');
    if (value !== 'two') await new Promise((r) => setTimeout(r, 200));
  }
  tt.equal(value, 'two', 'the same client reconnects');
});

t.test('a slow plugin → Timeout naming the deadline', async (tt) => {
  const backend = new MemoryStore({ slow: CANARY });
  const get = backend.get.bind(backend);
  let calls = 0;
  backend.get = async (...a) => {
    calls++;
    await new Promise((r) => setTimeout(r, 1500));
    return get(...a);
  };
  const server = await plugin({ backend });
  const c = await client('SecretStore/team-a/plugin', `127.0.0.1:${server.port}`, caOnly, 300);
  tt.teardown(() => c.close());
  const started = Date.now();
  const err = await caught(c.getSecret({ key: 'slow' }));
  const took = Date.now() - started;
  tt.equal(err.code, 'Timeout');
  tt.equal(err.message, `SecretStore/team-a/plugin key "slow": plugin at 127.0.0.1:${server.port} did not answer GetSecret within 300 ms (${MAX_ATTEMPTS} attempts)`);
  tt.equal(calls, MAX_ATTEMPTS, 'DEADLINE_EXCEEDED is retried, a bounded number of times');
  tt.ok(took >= 300 * MAX_ATTEMPTS, `each attempt waited its deadline: took ${took} ms`);
  tt.notMatch(err.message, CANARY);
});

t.test('retries: UNAVAILABLE once, then an answer → success; a slow first answer too', async (tt) => {
  const backend = new MemoryStore({ flaky: CANARY });
  const get = backend.get.bind(backend);
  let calls = 0;
  backend.get = async (key, version, caller) => {
    calls++;
    if (key === 'flaky' && calls === 1) throw new PluginError('Unavailable', 'backend warming up');
    if (key === 'slow-once' && calls === 1) await new Promise((r) => setTimeout(r, 800));
    return get(key, version, caller);
  };
  const server = await plugin({ backend });
  const c = await client('SecretStore/team-a/plugin', `127.0.0.1:${server.port}`, caOnly, 400);
  tt.teardown(() => c.close());
  tt.equal(Buffer.from(await c.getSecret({ key: 'flaky' })).toString(), CANARY);
  tt.equal(calls, 2, 'one retry after UNAVAILABLE');
  calls = 0;
  backend.set('slow-once', 'late');
  tt.equal(Buffer.from(await c.getSecret({ key: 'slow-once' })).toString(), 'late');
  tt.equal(calls, 2, 'one retry after DEADLINE_EXCEEDED');

  calls = 0;
  backend.get = async () => {
    calls++;
    throw new PluginError('Unavailable', 'backend down');
  };
  const err = await caught(c.getSecret({ key: 'flaky' }));
  tt.equal(err.code, 'Unreachable');
  tt.match(err.message, /plugin at 127\.0\.0\.1:\d+ is unavailable: backend down \(3 attempts\)/);
  tt.equal(calls, MAX_ATTEMPTS);
});

t.test('backoff is exponential, capped and jittered', async (tt) => {
  tt.equal(backoffMs(1, () => 0), 50);
  tt.equal(backoffMs(1, () => 1), 100);
  tt.equal(backoffMs(2, () => 1), 200);
  tt.equal(backoffMs(3, () => 0.5), 300);
  tt.equal(backoffMs(20, () => 1), 2000, 'capped');
});

t.test('reply errors follow the "<Code>: <message>" convention; values are masked', async (tt) => {
  const backend = new MemoryStore();
  const server = await plugin({ backend });
  const c = await client('SecretStore/team-a/plugin', `127.0.0.1:${server.port}`, caOnly);
  tt.teardown(() => c.close());
  const cases: [PluginError | Error, string][] = [
    [new PluginError('Forbidden', 'team-a may not read this'), 'Forbidden'],
    [new PluginError('AuthFailed', 'unknown client'), 'AuthFailed'],
    [new PluginError('Unsupported', 'no such feature'), 'Unsupported'],
    [new PluginError('NotFound', 'gone'), 'NotFound'],
  ];
  for (const [thrown, code] of cases) {
    backend.get = async () => {
      throw thrown;
    };
    const err = await caught(c.getSecret({ key: 'x' }));
    tt.equal(err.code, code, code);
    tt.match(err.message, `plugin at 127.0.0.1:${server.port}: ${thrown.message}`);
  }
  backend.get = async () => {
    throw new Error(`db said ${CANARY}`);
  };
  const internal = await caught(c.getSecret({ key: 'x' }));
  tt.equal(internal.code, 'Unknown', 'an unexpected plugin failure is INTERNAL → Unknown');
  tt.match(internal.message, /failed GetSecret \(INTERNAL: internal error in the plugin backend\)/);
  tt.notMatch(internal.message, CANARY);

  backend.put = async (_k, value) => {
    throw new PluginError('Unsupported', `cannot store "${Buffer.from(value).toString()}" here`);
  };
  const push = await caught(c.pushSecret(Buffer.from(CANARY), { remoteKey: 'x' }));
  tt.equal(push.code, 'Unsupported');
  tt.notMatch(push.message, CANARY, 'a pushed value echoed by the plugin is masked');
  tt.match(push.message, /cannot store "\[redacted\]" here/);

  tt.same(parseReplyError('notfound:  x'), { code: 'NotFound', message: 'x' }, 'codes are case-insensitive');
  tt.same(parseReplyError('boom'), { code: 'Unknown', message: 'boom' });
  tt.same(parseReplyError('Error: 42'), { code: 'Unknown', message: 'Error: 42' });
});

t.test('a server registered under another path → Unsupported naming /SecretsServer/<Method>', async (tt) => {
  const dir = await mkdtemp(join(tmpdir(), 'esi-grpc-proto-'));
  tt.teardown(() => rm(dir, { recursive: true, force: true }));
  const proto = join(dir, 'packaged.proto');
  const text = await readFile(secretsProtoPath(), 'utf8');
  await writeFile(proto, text.replace('syntax = "proto3";', 'syntax = "proto3";\npackage acme.secrets;'));
  // A plugin generated from a copy of the contract with a `package` line: its methods
  // live at /acme.secrets.SecretsServer/*, which is not where ESI calls.
  const loaded = grpc.loadPackageDefinition(protoLoader.loadSync(proto, { keepCase: true, defaults: true }));
  const service = ((loaded.acme as grpc.GrpcObject).secrets as grpc.GrpcObject).SecretsServer as grpc.ServiceClientConstructor;
  const misregistered = new grpc.Server();
  misregistered.addService(service.service, {
    GetSecret: (_c: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { secret: Buffer.from('x') }),
  });
  const port = await new Promise<number>((res, rej) => misregistered.bindAsync('127.0.0.1:0',
    grpc.ServerCredentials.createSsl(null, [{ cert_chain: Buffer.from(pki.server.cert), private_key: Buffer.from(pki.server.key) }]), (e, p) => (e ? rej(e) : res(p))));
  tt.teardown(() => misregistered.forceShutdown());
  const server = { port };
  const c = await client('SecretStore/team-a/plugin', `127.0.0.1:${server.port}`, caOnly);
  tt.teardown(() => c.close());
  const err = await caught(c.getSecret({ key: 'k' }));
  tt.equal(err.code, 'Unsupported');
  tt.match(err.message, /does not implement \/SecretsServer\/GetSecret \(UNIMPLEMENTED\): a plugin registers the service "SecretsServer" with no proto package/);
});

t.test('spec validation and TLS material problems', async (tt) => {
  const v = (spec: unknown) => provider.validateSpec(spec);
  tt.same(v({ url: 'plugin.esi-system.svc:50051' }), []);
  tt.same(v({ url: 'https://plugin.esi-system.svc' }), []);
  tt.same(v({ url: 'http://[::1]:8080' }), []);
  tt.match(v({}).join(), /grpc\.url must be set/);
  tt.match(v({ url: 'plugin' }).join(), /is not host:port/);
  tt.match(v({ url: 'dns:///plugin:50051' }).join(), /scheme "dns" is not supported/);
  tt.match(v({ url: 'grpc://plugin:50051' }).join(), /scheme "grpc" is not supported/);
  tt.match(v({ url: 'https://plugin:50051/path' }).join(), /no path/);
  tt.match(v({ url: 'plugin:70000' }).join(), /port must be 1-65535/);
  tt.match(v({ url: 'a:1', tlsSecretRef: {} }).join(), /grpc\.tlsSecretRef\.name must be a non-empty string/);
  tt.same(parseUrl('https://plugin.esi-system.svc'), { target: 'plugin.esi-system.svc:443', tls: true, display: 'https://plugin.esi-system.svc' });
  tt.same(parseUrl('[::1]:50051'), { target: '[::1]:50051', tls: true, display: '[::1]:50051' });
  tt.same(parseUrl('http://plugin'), { target: 'plugin:80', tls: false, display: 'http://plugin' });

  const url = `127.0.0.1:${tlsPlugin.port}`;
  const bad = async (creds: Creds) => caught(client('SecretStore/team-a/plugin', url, creds));
  tt.match((await bad({})).message, /Secret "plugin-tls" holds none of ca\.crt, tls\.crt, tls\.key/);
  tt.match((await bad({ 'plugin-tls/tls.crt': pki.client.cert })).message, /has tls\.crt but no tls\.key/);
  tt.match((await bad({ 'plugin-tls/ca.crt': 'not a pem' })).message, /ca\.crt is not PEM/);
  const mismatch = await bad({ 'plugin-tls/tls.crt': pki.client.cert, 'plugin-tls/tls.key': strangerClient.key });
  tt.equal(mismatch.code, 'InvalidSpec');
  tt.match(mismatch.message, /cannot load the TLS material/);
  tt.notMatch(mismatch.message, /PRIVATE KEY/);
});

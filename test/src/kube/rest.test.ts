// The API client's connections (src/kube/rest.ts): requests with the same TLS material share
// kept-alive sockets, and a kubeconfig whose client certificate changes gets new connections
// that present the new one (the socket pool is named per set of material, not per request).
import { KubeConfig } from '@kubernetes/client-node';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { generate } from 'selfsigned';
import t from 'tap';
import { generateCa, issueServingCert } from '../../../certs/pki.js';
import { isKubeStatus, KubeRest, UNREAD } from '../../../src/kube/rest.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

async function clientCert(cn: string) {
  const now = Date.now();
  return generate([{ name: 'commonName', value: cn }], {
    keyType: 'ec', curve: 'P-256', algorithm: 'sha256', notBeforeDate: new Date(now - 60_000), notAfterDate: new Date(now + 3600_000),
    extensions: [{ name: 'basicConstraints', cA: false }, { name: 'keyUsage', digitalSignature: true }, { name: 'extKeyUsage', clientAuth: true }],
  });
}

t.test('one pool of kept-alive sockets per set of TLS material; a new client certificate is presented', async (t) => {
  const now = Date.now();
  const ca = await generateCa(now, 3600_000);
  const serving = await issueServingCert(ca, { dnsNames: ['localhost'], ips: ['127.0.0.1'] }, now, 3600_000);
  const [alice, bob] = await Promise.all([clientCert('alice'), clientCert('bob')]);
  let connections = 0;
  const server = createServer({ cert: serving.certPem, key: serving.keyPem, ca: [alice.cert, bob.cert], requestCert: true, rejectUnauthorized: true }, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ user: (req.socket as TLSSocket).getPeerCertificate().subject?.CN }));
  });
  server.on('secureConnection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const kc = new KubeConfig();
  const load = (user: { cert: string; private: string }) => kc.loadFromOptions({
    clusters: [{ name: 'c', server: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, caData: b64(ca.certPem) }],
    users: [{ name: 'u', certData: b64(user.cert), keyData: b64(user.private) }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x',
  });
  load(alice);
  const rest = new KubeRest(kc, { maxSockets: 1 });
  t.teardown(() => rest.close());
  for (let i = 0; i < 5; i++) t.same(await rest.get('/api'), { user: 'alice' });
  t.equal(connections, 1, 'five requests, one connection');

  load(bob);
  // The kubeconfig is read again within a second (AUTH_REUSE_MS): until then the old pool serves.
  let user = 'alice';
  while (user === 'alice') user = (await rest.get<{ user: string }>('/api')).user;
  t.equal(user, 'bob', 'the new certificate is presented');
  t.equal(connections, 2, 'on a new connection');
  t.same(await rest.get('/api'), { user: 'bob' });
  t.equal(connections, 2, 'which is kept alive in turn');
});

t.test('a write whose answer is not read: success resolves without it, a refusal still says why', async (t) => {
  const server = createHttpServer((req, res) => {
    if (req.url === '/refused') return void res.writeHead(409, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', reason: 'AlreadyExists', message: 'secrets "db" already exists' }));
    res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Secret', data: { pw: 'c2VjcmV0' } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }], users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x',
  });
  const rest = new KubeRest(kc);
  t.teardown(() => rest.close());
  t.equal(await rest.create('/ok', {}, UNREAD), undefined, 'nothing of the answer kept');
  t.same(await rest.create('/ok', {}), { kind: 'Secret', data: { pw: 'c2VjcmV0' } }, 'read when asked');
  const err = await rest.create('/refused', {}, UNREAD).then(() => undefined, (e: unknown) => e);
  t.ok(isKubeStatus(err, 409));
  t.match((err as Error).message, /already exists/);
});

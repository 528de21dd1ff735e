// The vault provider's transport (src/providers/vault/transport.ts) against local HTTP(S)
// servers playing a standby and an active Vault node: what reaches the server, redirects,
// the refused downgrade, bounds and error codes. The provider's calls against a real
// OpenBao are in vault.test.ts and vault-auth.test.ts.
import t from 'tap';
import type { ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { generateCa, issueServingCert } from '../../../../certs/pki.js';
import { generate } from 'selfsigned';
import { MAX_RESPONSE_BYTES, send } from '../../../../src/providers/vault/transport.js';
import { serve } from '../../../support/standins/http.js';

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
};

async function failure(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p;
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error('expected the call to fail');
}

t.test('a call sends method, headers and JSON body; answers come back parsed, empty or as text', async (tt) => {
  const vault = await serve(tt, (req, res) => {
    if (req.url === '/v1/empty') return void res.writeHead(204).end();
    if (req.url === '/v1/text') return void res.writeHead(502).end('bad gateway');
    json(res, 200, { data: { ok: true } });
  });
  const ok = await send({ method: 'POST', uri: `${vault.url}/v1/secret/data/a`, headers: { 'X-Vault-Token': 'tok' }, json: { data: { k: 'v' } } }, { timeoutMs: 2000 });
  tt.same(ok, { statusCode: 200, body: { data: { ok: true } }, request: { path: '/v1/secret/data/a' } });
  tt.equal(vault.seen[0]!.method, 'POST');
  tt.equal(vault.seen[0]!.headers['x-vault-token'], 'tok');
  tt.equal(vault.seen[0]!.headers['content-type'], 'application/json');
  tt.same(JSON.parse(vault.seen[0]!.body), { data: { k: 'v' } });
  tt.same(await send({ method: 'GET', uri: `${vault.url}/v1/empty` }, { timeoutMs: 2000 }), { statusCode: 204, body: undefined, request: { path: '/v1/empty' } });
  tt.same((await send({ method: 'GET', uri: `${vault.url}/v1/text` }, { timeoutMs: 2000 })).body, 'bad gateway');
});

t.test('a standby\'s 307 is followed to the active node with the same method, body and token', async (tt) => {
  const active = await serve(tt, (_req, res, body) => json(res, 200, { echoed: JSON.parse(body || 'null') }));
  const standby = await serve(tt, (req, res) => {
    res.writeHead(307, { Location: `${active.url}${req.url}` });
    res.end();
  });
  const r = await send({ method: 'POST', uri: `${standby.url}/v1/auth/approle/login`, headers: { 'X-Vault-Token': 'tok' }, json: { role_id: 'r' } }, { timeoutMs: 2000 });
  tt.equal(r.statusCode, 200);
  tt.same(r.body, { echoed: { role_id: 'r' } });
  tt.equal(active.seen[0]!.method, 'POST');
  tt.equal(active.seen[0]!.url, '/v1/auth/approle/login');
  tt.equal(active.seen[0]!.headers['x-vault-token'], 'tok');
});

t.test('redirect loops stop; https never redirects to http (the token is a header)', async (tt) => {
  const loop = await serve(tt, (req, res) => {
    res.writeHead(307, { Location: req.url! });
    res.end();
  });
  const e = await failure(send({ method: 'GET', uri: `${loop.url}/v1/x` }, { timeoutMs: 2000 }));
  tt.equal(e.code, 'ERR_TOO_MANY_REDIRECTS');
  tt.equal(loop.seen.length, 6, 'the first call and five redirects');

  const now = Date.now();
  const ca = await generateCa(now, 3600_000);
  const cert = await issueServingCert(ca, { dnsNames: ['localhost'], ips: ['127.0.0.1'] }, now, 3600_000);
  const plain = await serve(tt, (_req, res) => json(res, 200, {}));
  const secure = await serve(tt, (req, res) => {
    res.writeHead(307, { Location: `${plain.url}${req.url}` });
    res.end();
  }, { cert: cert.certPem, key: cert.keyPem });
  const down = await failure(send({ method: 'GET', uri: `${secure.url}/v1/x`, headers: { 'X-Vault-Token': 'tok' } }, { timeoutMs: 2000, ca: ca.certPem }));
  tt.equal(down.code, 'ERR_REDIRECT_REFUSED');
  tt.equal(plain.seen.length, 0, 'nothing reached the plain-text server');

  const wrongCa = await failure(send({ method: 'GET', uri: `${secure.url}/v1/x` }, { timeoutMs: 2000 }));
  tt.match(wrongCa.code, /CERT|SELF_SIGNED|UNABLE_TO/, 'an unverified server is a TLS error');
});

t.test('spec.tls: the client certificate and key are presented to a server that requires them', async (tt) => {
  const now = Date.now();
  const ca = await generateCa(now, 3600_000);
  const serving = await issueServingCert(ca, { dnsNames: ['localhost'], ips: ['127.0.0.1'] }, now, 3600_000);
  const client = await generate([{ name: 'commonName', value: 'esi-agent' }], {
    keyType: 'ec', curve: 'P-256', algorithm: 'sha256', notBeforeDate: new Date(now - 60_000), notAfterDate: new Date(now + 3600_000),
    extensions: [{ name: 'basicConstraints', cA: false }, { name: 'keyUsage', digitalSignature: true }, { name: 'extKeyUsage', clientAuth: true }],
  });
  const vault = await serve(tt, (req, res) => json(res, 200, { cn: (req.socket as TLSSocket).getPeerCertificate().subject?.CN }), {
    cert: serving.certPem, key: serving.keyPem, ca: client.cert, requestCert: true, rejectUnauthorized: true,
  });
  const ok = await send({ method: 'GET', uri: `${vault.url}/v1/x` }, { timeoutMs: 2000, ca: ca.certPem, cert: client.cert, key: client.private });
  tt.same(ok.body, { cn: 'esi-agent' }, 'the server saw the client certificate');
  const without = await failure(send({ method: 'GET', uri: `${vault.url}/v1/x` }, { timeoutMs: 2000, ca: ca.certPem }));
  tt.ok(without.code, `without a client certificate the handshake fails (${without.code})`);
});

t.test('a slow server is a timeout; an oversized answer is cut off', async (tt) => {
  const slow = await serve(tt, () => undefined);
  const started = Date.now();
  const e = await failure(send({ method: 'GET', uri: `${slow.url}/v1/x` }, { timeoutMs: 300 }));
  tt.equal(e.code, 'ETIMEDOUT');
  tt.ok(Date.now() - started < 5000, 'the call returned after its bound');

  const chunk = Buffer.alloc(1024 * 1024, 'a');
  const huge = await serve(tt, (_req, res) => {
    res.writeHead(200);
    let sent = 0;
    const more = () => {
      while (sent <= MAX_RESPONSE_BYTES) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      res.end();
    };
    res.on('error', () => undefined);
    more();
  });
  const big = await failure(send({ method: 'GET', uri: `${huge.url}/v1/x` }, { timeoutMs: 20_000 }));
  tt.equal(big.code, 'ERR_RESPONSE_TOO_LARGE');

  const refused = await failure(send({ method: 'GET', uri: 'http://127.0.0.1:1/v1/x' }, { timeoutMs: 2000 }));
  tt.equal(refused.code, 'ECONNREFUSED');
});

// The stores reached over HTTP (src/providers/http-store.ts) through an outbound proxy from the
// environment (src/egress/proxy.ts), with a real forward proxy on 127.0.0.1: an http store
// (the Infisical stand-in) by absolute-URI requests, an https store (the Bitwarden SDK server
// stand-in) through a CONNECT tunnel with its CA still verified end to end, and straight to the
// store under NO_PROXY. No platform: the stores and the proxy are local servers.
import t from 'tap';
import { provider as bitwarden } from '../../../src/providers/bitwardensecretsmanager/index.js';
import { provider as infisical } from '../../../src/providers/infisical/index.js';
import { startProxy, withProxyEnv } from '../../support/proxy-server.js';
import { startBitwardenStandIn } from '../../support/standins/bitwarden.js';
import { providerError, testContext } from '../../support/provider-context.js';
import { startInfisicalStandIn } from '../../support/standins/infisical.js';

const CANARY = 'CANARY-http-proxy-51e0';
const dec = (b: Uint8Array) => Buffer.from(b).toString('utf8');

t.test('an http store through HTTP_PROXY, and direct under NO_PROXY', async (t) => {
  const proxy = await startProxy(t);
  const inf = await startInfisicalStandIn(t, { universal: { clientId: 'id', clientSecret: CANARY } }, { slug: 'p', environment: 'dev', folders: { '/': { KEY: `${CANARY}-v` } } });
  const spec = {
    auth: { universalAuthCredentials: { clientId: { name: 'c', key: 'id' }, clientSecret: { name: 'c', key: 'secret' } } },
    secretsScope: { projectSlug: 'p', environmentSlug: 'dev' }, hostAPI: inf.url,
  };
  const read = async () => {
    const c = await infisical.newClient(testContext({ storeId: 'SecretStore/a/inf', spec, credentials: { 'c/id': 'id', 'c/secret': CANARY } }));
    return dec(await c.getSecret({ key: 'KEY' }));
  };
  t.equal(await withProxyEnv({ HTTP_PROXY: proxy.url }, read), `${CANARY}-v`);
  const host = new URL(inf.url).host;
  t.same(proxy.seen, [`POST ${host}`, `GET ${host}`], 'the login and the read went through the proxy');
  t.equal(await withProxyEnv({ HTTP_PROXY: proxy.url, NO_PROXY: '127.0.0.1' }, read), `${CANARY}-v`);
  t.equal(proxy.seen.length, 2, 'NO_PROXY: straight to the store');
});

t.test('an https store through a CONNECT tunnel: the store\'s CA still verifies it', async (t) => {
  const proxy = await startProxy(t);
  const org = '3f9c8e2a-1b7d-4c5e-9a6f-0d2e4b6c8a10';
  const project = '7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
  const bw = await startBitwardenStandIn(t, CANARY, org, [{ key: 'db', value: `${CANARY}-bw`, projectId: project }]);
  const spec = (caBundle?: string) => ({
    bitwardenServerSDKURL: bw.url, organizationID: org, projectID: project, ...(caBundle ? { caBundle } : {}),
    auth: { secretRef: { credentials: { name: 'bw', key: 'token' } } },
  });
  const client = (s: object) => bitwarden.newClient(testContext({ storeId: 'SecretStore/a/bw', spec: s, credentials: { 'bw/token': CANARY } }));
  const value = await withProxyEnv({ HTTPS_PROXY: proxy.url }, async () => dec(await (await client(spec(Buffer.from(bw.caPem).toString('base64')))).getSecret({ key: 'db' })));
  t.equal(value, `${CANARY}-bw`);
  t.match(proxy.seen[0], /^CONNECT 127\.0\.0\.1:\d+$/);
  const err = await withProxyEnv({ HTTPS_PROXY: proxy.url }, async () => providerError(async () => (await client(spec())).getSecret({ key: 'db' })));
  t.equal(err.code, 'Unreachable', 'without the store\'s CA the tunnelled TLS is refused');
  t.match(err.message, /TLS verification of the server failed/);
  t.notMatch(err.message, /CANARY/);
});

// ECRAuthorizationToken with ESO's `scope: public`: a token of ECR Public's own API
// (service `ecr-public`, target SpencerFrontendService.GetAuthorizationToken, us-east-1 only).
// moto, which serves the private ECR test (generators.test.ts), has no ECR Public: its newest
// release (the pinned 5.2.5) answers 500 "Unable to find appropriate backend for
// ecr-public.us-east-1.amazonaws.com". So the endpoint here is a stand-in that speaks ECR
// Public's documented JSON 1.1 protocol and checks the AWS Signature V4 of each request
// against the tenant's own access key: what ESI sends (service, region, operation, whose
// credentials) and what it writes (ESO's keys for a public registry: username, password,
// expires_at, no proxy_endpoint) are real; AWS's answer is the stand-in's.
import t from 'tap';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { GENERATORS_GROUP } from '../../../src/api/types.js';
import { controllerEnv, decoded, getSecret, GROUP, ready, startController } from '../../support/fixtures/controller.js';
import { createNamespace } from '../../support/kube.js';
import { close, listen, readBody, send } from '../../support/platform/backends/standin-http.js';

const KEY = { id: `AKIAPUBLIC${randomBytes(4).toString('hex').toUpperCase()}`, secret: randomBytes(20).toString('base64') };
const TOKEN_PASSWORD = `ecr-public-${randomBytes(6).toString('hex')}`;
const EXPIRES = Math.floor(Date.now() / 1000) + 12 * 3600;

interface Seen {
  target?: string;
  scope?: string;
  signatureValid: boolean;
}
const seen: Seen[] = [];

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');

/** Signature V4 of a request to `/` (no query), as AWS checks it. */
function signatureValid(headers: Record<string, string | string[] | undefined>, method: string, body: string): { scope?: string; valid: boolean } {
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]+)$/.exec(String(headers.authorization ?? ''));
  if (!m) return { valid: false };
  const [, id, date, region, service, signed, signature] = m as unknown as string[];
  const scope = `${date}/${region}/${service}/aws4_request`;
  const names = signed!.split(';');
  const canonical = [method, '/', '', ...names.map((n) => `${n}:${String(headers[n] ?? '').trim().replace(/\s+/g, ' ')}`), '', signed, sha256(body)].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', String(headers['x-amz-date']), scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${KEY.secret}`, date!), region!), service!), 'aws4_request');
  return { scope: `${id}/${scope}`, valid: id === KEY.id && hmac(key, toSign).toString('hex') === signature };
}

const standin = createServer((req, res) => void (async () => {
  const body = await readBody(req);
  const check = signatureValid(req.headers, req.method ?? '', body);
  const target = String(req.headers['x-amz-target'] ?? '');
  seen.push({ target, ...(check.scope ? { scope: check.scope } : {}), signatureValid: check.valid });
  if (!check.valid) return send(res, 403, { __type: 'InvalidSignatureException', message: 'signature does not match' });
  if (target !== 'SpencerFrontendService.GetAuthorizationToken') return send(res, 400, { __type: 'UnknownOperationException' });
  send(res, 200, { authorizationData: { authorizationToken: Buffer.from(`AWS:${TOKEN_PASSWORD}`).toString('base64'), expiresAt: EXPIRES } }, { 'content-type': 'application/x-amz-json-1.1' });
})());
const port = await listen(standin);
t.teardown(() => close(standin));

const env = await controllerEnv(t);
const run = randomBytes(3).toString('hex');
const ns = await createNamespace(env.kc, 'ctl-ecrpub', t, { 'esi-ecrpub-run': run });
// ESO's variable for the ECR Public endpoint, inherited by the controller.
const saved = process.env.AWS_ECR_PUBLIC_ENDPOINT;
process.env.AWS_ECR_PUBLIC_ENDPOINT = `http://127.0.0.1:${port}`;
t.teardown(() => {
  if (saved === undefined) delete process.env.AWS_ECR_PUBLIC_ENDPOINT;
  else process.env.AWS_ECR_PUBLIC_ENDPOINT = saved;
});
await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--leader-elect=false', '--namespace-selector', `esi-ecrpub-run=${run}`], t);

t.test('scope public: a token from ECR Public\'s API, signed with the tenant\'s key for ecr-public in us-east-1, with ESO\'s keys', async (t) => {
  await env.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'aws-creds' }, stringData: { 'access-key': KEY.id, 'secret-access-key': KEY.secret } } });
  await env.custom.createNamespacedCustomObject({ group: GENERATORS_GROUP, version: 'v1alpha1', namespace: ns, plural: 'ecrauthorizationtokens', body: {
    apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind: 'ECRAuthorizationToken', metadata: { name: 'public' },
    spec: { region: 'eu-west-1', scope: 'public', auth: { secretRef: {
      accessKeyIDSecretRef: { name: 'aws-creds', key: 'access-key' }, secretAccessKeySecretRef: { name: 'aws-creds', key: 'secret-access-key' },
    } } },
  } });
  await env.custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', body: {
    apiVersion: `${GROUP}/v1`, kind: 'ExternalSecret', metadata: { name: 'public' },
    spec: { refreshInterval: '1h', dataFrom: [{ sourceRef: { generatorRef: { apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind: 'ECRAuthorizationToken', name: 'public' } } }] },
  } });
  await ready(env, ns, 'public', 'True', 'SecretSynced');
  t.same(decoded(await getSecret(env, ns, 'public')), { username: 'AWS', password: TOKEN_PASSWORD, expires_at: String(EXPIRES) }, 'ESO\'s keys for a public registry (no proxy_endpoint)');
  t.ok(seen.length > 0, 'ECR Public\'s endpoint was called');
  t.ok(seen.every((s) => s.signatureValid), 'every request signed (Signature V4) with the tenant\'s own key');
  t.ok(seen.every((s) => s.target === 'SpencerFrontendService.GetAuthorizationToken'), 'ECR Public\'s GetAuthorizationToken');
  t.ok(seen.every((s) => s.scope?.endsWith('/us-east-1/ecr-public/aws4_request')), 'for service ecr-public in us-east-1, whatever spec.region says');
});

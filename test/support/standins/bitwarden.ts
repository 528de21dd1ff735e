// A stand-in for the Bitwarden SDK server (external-secrets/bitwarden-sdk-server) on
// 127.0.0.1 over TLS: the REST API ESO's provider calls (/rest/api/1/secret GET/POST/PUT/
// DELETE, /rest/api/1/secrets GET; JSON bodies; Warden-Access-Token, Warden-Api-Url and
// Warden-Identity-Url headers). Answers 400 for an unknown id or a wrong token, as the
// server does when the SDK call fails. In-memory, one organization.
import { randomUUID } from 'node:crypto';
import { generateCa, issueServingCert } from '../../../certs/pki.js';
import { json, serve, type StandIn } from './http.js';

export interface BwSecret {
  id: string;
  key: string;
  value: string;
  note: string;
  organizationId: string;
  projectId: string | null;
}

export interface BitwardenStandIn extends StandIn {
  caPem: string;
  secrets: Map<string, BwSecret>;
  /** The Warden-Api-Url / Warden-Identity-Url headers of every request. */
  wardenUrls: string[];
}

/** `extraIps`: more addresses the serving certificate names (where pods on the test node
 *  reach it, test/support/fixtures/node.ts reachableFromPods). */
export async function startBitwardenStandIn(t: { teardown(fn: () => unknown): void }, token: string, org: string, seed: Omit<BwSecret, 'id' | 'organizationId' | 'note'>[], extraIps: string[] = []): Promise<BitwardenStandIn> {
  const now = Date.now();
  const ca = await generateCa(now, 3600_000);
  const cert = await issueServingCert(ca, { dnsNames: ['localhost'], ips: ['127.0.0.1', ...extraIps] }, now, 3600_000);
  const secrets = new Map<string, BwSecret>();
  for (const s of seed) {
    const id = randomUUID();
    secrets.set(id, { id, note: '', organizationId: org, ...s });
  }
  const wardenUrls: string[] = [];
  const srv = await serve(t, (req, res, body) => {
    wardenUrls.push(`${req.headers['warden-api-url']} ${req.headers['warden-identity-url']}`);
    const fail = (message: string) => void res.writeHead(400, { 'Content-Type': 'text/plain' }).end(message);
    if (req.headers['warden-access-token'] !== token) return fail('failed to authenticate');
    const b = (body ? JSON.parse(body) : {}) as Record<string, unknown>;
    if (req.url === '/rest/api/1/secrets' && req.method === 'GET') {
      if (b.organizationID !== org) return fail('wrong organization');
      return json(res, 200, { data: [...secrets.values()].map(({ id, key, organizationId }) => ({ id, key, organizationId })) });
    }
    if (req.url !== '/rest/api/1/secret') return fail('no such route');
    if (req.method === 'GET') {
      const s = secrets.get(String(b.id));
      return s ? json(res, 200, s) : fail('secret not found');
    }
    if (req.method === 'POST' || req.method === 'PUT') {
      const id = req.method === 'POST' ? randomUUID() : String(b.id);
      if (req.method === 'PUT' && !secrets.has(id)) return fail('secret not found');
      const s: BwSecret = { id, key: String(b.key), value: String(b.value), note: String(b.note ?? ''), organizationId: String(b.organizationId), projectId: (b.projectIds as string[] | undefined)?.[0] ?? null };
      secrets.set(id, s);
      return json(res, 200, s);
    }
    if (req.method === 'DELETE') {
      const ids = (b.ids as string[] | undefined) ?? [];
      return json(res, 200, { data: ids.map((id) => (secrets.delete(id) ? { id } : { id, error: 'not found' })) });
    }
    fail('no such route');
  }, { cert: cert.certPem, key: cert.keyPem });
  return { ...srv, caPem: ca.certPem, secrets, wardenUrls };
}

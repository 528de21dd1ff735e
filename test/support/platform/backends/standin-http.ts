// Small HTTP and JWT helpers shared by the Azure stand-ins (see lowkey-vault.ts).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');
export const nowS = () => Math.floor(Date.now() / 1000);

export function decodeJwt(token: string): { header: Record<string, unknown>; payload: Record<string, unknown>; signed: string; sig: Buffer } | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    return {
      header: JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8')) as Record<string, unknown>,
      payload: JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Record<string, unknown>,
      signed: `${parts[0]}.${parts[1]}`,
      sig: Buffer.from(parts[2]!, 'base64url'),
    };
  } catch {
    return undefined;
  }
}

export function send(res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { ...(text ? { 'content-type': 'application/json; charset=utf-8' } : {}), 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

export function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

// A stand-in for Doppler's API on 127.0.0.1: the subset of the documented v3 REST API
// (docs.doppler.com/reference) ESI calls: GET /v3/me, GET /v3/configs/config/secret
// (`{name, value: {raw, computed}}`), GET /v3/configs/config/secrets/download (format json /
// env, name_transformer). A service token is scoped to one project/config: project and config
// may be left out; another project or config is 403. Auth: Bearer or HTTP basic with the
// token as user name; 401 otherwise. Errors as Doppler answers them ({messages, success}).
import type { ServerResponse } from 'node:http';
import { json, serve, type StandIn } from './http.js';

export interface DopplerConfig {
  project: string;
  config: string;
  secrets: Record<string, string>;
}

const words = (name: string) => name.toLowerCase().split('_').filter(Boolean);
const cap = (w: string) => w.charAt(0).toUpperCase() + w.slice(1);

/** Doppler's documented name transformers (the API applies them; ESO passes the name). */
const TRANSFORMERS: Record<string, (n: string) => string> = {
  camel: (n) => words(n).map((w, i) => (i === 0 ? w : cap(w))).join(''),
  'upper-camel': (n) => words(n).map(cap).join(''),
  'lower-snake': (n) => words(n).join('_'),
  'lower-kebab': (n) => words(n).join('-'),
  'tf-var': (n) => `TF_VAR_${words(n).join('_')}`,
  'dotnet-env': (n) => n.split('__').map((p) => words(p).map(cap).join('')).join('__'),
};

export async function startDopplerStandIn(t: { teardown(fn: () => unknown): void }, token: string, scope: DopplerConfig): Promise<StandIn> {
  const fail = (res: ServerResponse, status: number, message: string) => json(res, status, { messages: [message], success: false });
  return serve(t, (req, res) => {
    const auth = req.headers.authorization ?? '';
    const basic = auth.startsWith('Basic ') ? Buffer.from(auth.slice(6), 'base64').toString('utf8').replace(/:$/, '') : undefined;
    if (auth !== `Bearer ${token}` && basic !== token) return fail(res, 401, 'Invalid Auth token');
    const u = new URL(req.url!, 'http://x');
    if (u.pathname === '/v3/me') return json(res, 200, { name: 'esi-test', type: 'service_token', workplace: { name: 'test' } });
    const project = u.searchParams.get('project');
    const config = u.searchParams.get('config');
    if ((project && project !== scope.project) || (config && config !== scope.config)) return fail(res, 403, 'This token does not have access to requested project or config');
    if (u.pathname === '/v3/configs/config/secret') {
      const name = u.searchParams.get('name') ?? '';
      if (!Object.hasOwn(scope.secrets, name)) return fail(res, 404, 'Could not find requested secret');
      const value = scope.secrets[name]!;
      return json(res, 200, { name, value: { raw: value, computed: value }, success: true });
    }
    if (u.pathname === '/v3/configs/config/secrets/download') {
      const transform = TRANSFORMERS[u.searchParams.get('name_transformer') ?? ''] ?? ((n: string) => n);
      const entries = Object.entries(scope.secrets).map(([k, v]) => [transform(k), v] as const);
      const format = u.searchParams.get('format') ?? 'json';
      if (format === 'json') return json(res, 200, Object.fromEntries(entries));
      if (format === 'env') {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        return void res.end(entries.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join('\n') + '\n');
      }
      return fail(res, 400, 'unsupported format in this stand-in');
    }
    fail(res, 404, 'Not found');
  });
}

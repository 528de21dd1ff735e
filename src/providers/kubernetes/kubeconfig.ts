// `spec.provider.kubernetes.authRef`: a kubeconfig kept in a Secret. ESI takes from it
// the current context's server, CA and static credentials (token or client certificate,
// inline data only). Anything that would run a program or read another machine's files
// (exec, auth-provider, file paths) or turn TLS verification off is refused, with the
// field named. Messages never quote the file (it holds credentials).
import { ProviderError } from '../types.js';
import { isObject, type Json } from '../../json-object.js';



export interface KubeconfigAuth {
  server: string;
  /** PEM; undefined = the system roots. */
  ca?: string;
  servername?: string;
  token?: string;
  cert?: Buffer;
  key?: Buffer;
  /** Names of the context, cluster and user used (for messages). */
  context: string;
  user: string;
}

function named(list: unknown, name: string, field: string): Json | undefined {
  if (!Array.isArray(list)) return undefined;
  const item = list.find((e) => isObject(e) && e.name === name) as Json | undefined;
  return item && isObject(item[field]) ? (item[field] as Json) : undefined;
}

const b64 = (v: unknown): Buffer | undefined => (typeof v === 'string' && v !== '' ? Buffer.from(v, 'base64') : undefined);

const REFUSED_CLUSTER: Record<string, string> = {
  'insecure-skip-tls-verify': 'turns TLS verification off, which ESI never does',
  'certificate-authority': 'names a file; inline the CA as certificate-authority-data',
  'proxy-url': 'is not supported',
};
const REFUSED_USER: Record<string, string> = {
  exec: 'runs a program, which the agent never does',
  'auth-provider': 'runs a plugin, which the agent never does',
  tokenFile: 'names a file; inline the token as token',
  'client-certificate': 'names a file; inline it as client-certificate-data',
  'client-key': 'names a file; inline it as client-key-data',
  username: 'basic authentication is not supported',
  password: 'basic authentication is not supported',
};

function refuse(storeId: string, table: Record<string, string>, obj: Json, where: string): void {
  for (const [field, why] of Object.entries(table)) {
    const v = obj[field];
    if (v === undefined || v === null || v === false || v === '') continue;
    throw new ProviderError('Unsupported', storeId, `kubeconfig in authRef: ${where}.${field} ${why}`);
  }
}

/** `current-context`, or the only context when there is just one. */
function currentContext(doc: Json, contexts: unknown[]): string | undefined {
  const cur = doc['current-context'];
  if (typeof cur === 'string' && cur !== '') return cur;
  return contexts.length === 1 && isObject(contexts[0]) && typeof contexts[0].name === 'string' ? contexts[0].name : undefined;
}

/** Parses a kubeconfig (YAML or JSON) and returns what its current context selects. */
export async function parseKubeconfig(storeId: string, text: string): Promise<KubeconfigAuth> {
  const { parse } = await import('yaml');
  let doc: unknown;
  try {
    doc = parse(text);
  } catch {
    // YAML errors quote the input: never propagate them.
    throw new ProviderError('InvalidSpec', storeId, 'the kubeconfig in authRef is not valid YAML');
  }
  if (!isObject(doc)) throw new ProviderError('InvalidSpec', storeId, 'the kubeconfig in authRef is not a mapping');
  const contexts = Array.isArray(doc.contexts) ? doc.contexts : [];
  const current = currentContext(doc, contexts);
  if (!current) throw new ProviderError('InvalidSpec', storeId, 'the kubeconfig in authRef has no current-context');
  const ctx = named(contexts, current, 'context');
  if (!ctx) throw new ProviderError('InvalidSpec', storeId, `the kubeconfig in authRef has no context "${current}"`);
  const clusterName = String(ctx.cluster ?? '');
  const userName = String(ctx.user ?? '');
  const cluster = named(doc.clusters, clusterName, 'cluster');
  if (!cluster) throw new ProviderError('InvalidSpec', storeId, `the kubeconfig in authRef has no cluster "${clusterName}"`);
  const user = named(doc.users, userName, 'user') ?? {};
  refuse(storeId, REFUSED_CLUSTER, cluster, `clusters[${clusterName}]`);
  refuse(storeId, REFUSED_USER, user, `users[${userName}]`);
  if (typeof cluster.server !== 'string' || !cluster.server.startsWith('https://')) {
    throw new ProviderError('InvalidSpec', storeId, `kubeconfig in authRef: clusters[${clusterName}].server must be an https URL`);
  }
  const out: KubeconfigAuth = { server: cluster.server, context: current, user: userName };
  const ca = b64(cluster['certificate-authority-data']);
  if (ca) out.ca = ca.toString('utf8');
  if (typeof cluster['tls-server-name'] === 'string' && cluster['tls-server-name']) out.servername = cluster['tls-server-name'];
  return Object.assign(out, userCredentials(storeId, user, userName));
}

function userCredentials(storeId: string, user: Json, userName: string): Pick<KubeconfigAuth, 'token' | 'cert' | 'key'> {
  const out: Pick<KubeconfigAuth, 'token' | 'cert' | 'key'> = {};
  if (typeof user.token === 'string' && user.token !== '') out.token = user.token.trim();
  const cert = b64(user['client-certificate-data']);
  const key = b64(user['client-key-data']);
  if (Boolean(cert) !== Boolean(key)) {
    throw new ProviderError('InvalidSpec', storeId, `kubeconfig in authRef: users[${userName}] needs both client-certificate-data and client-key-data`);
  }
  if (cert && key) Object.assign(out, { cert, key });
  if (!out.token && !out.cert) {
    throw new ProviderError('InvalidSpec', storeId, `kubeconfig in authRef: users[${userName}] has no token and no client certificate`);
  }
  return out;
}

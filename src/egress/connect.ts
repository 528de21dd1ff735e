// Sockets to an address a tenant named, opened only here: the name is resolved once, every
// address it resolves to is checked against the policy (src/egress/policy.ts), and the
// socket connects to the address that was checked — the lookup hands Node exactly that one,
// so a name cannot answer a public address for the check and a private one for the
// connection (DNS rebinding). Address literals are checked before the socket exists.
// Everything that dials a store spec's address goes through this module and
// src/egress/http.ts, src/egress/grpc.ts; test/src/egress/connect.one-way-out.test.ts fails on any other.
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, Socket, type LookupFunction } from 'node:net';
import type { Duplex } from 'node:stream';
import { addressProblem, type AddressPolicy } from './policy.js';
import { proxyAgent } from './proxy.js';

/** A refused or failed dial, value-free: the code for the providers' error maps. */
export class EgressError extends Error {
  override name = 'EgressError';
  constructor(
    readonly code: 'Unreachable' | 'Timeout' | 'Forbidden' | 'Unknown',
    message: string,
    /** Node-style name of what happened, for transports that speak in those
     *  (ERR_EGRESS_REFUSED, ERR_REDIRECT_REFUSED, ERR_TOO_MANY_REDIRECTS, ERR_RESPONSE_TOO_LARGE). */
    readonly reason?: string,
  ) {
    super(message);
  }
}

export interface Resolved {
  address: string;
  family: number;
}

const bare = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

/** Resolves `host` and checks every address it has; resolves with the first, which the
 *  caller connects to. Rejects with EgressError('Forbidden') naming the address. */
export async function resolveChecked(host: string, policy: AddressPolicy): Promise<Resolved> {
  const name = bare(host);
  let found: Resolved[];
  if (isIP(name)) found = [{ address: name, family: isIP(name) }];
  else {
    try {
      found = await dnsLookup(name, { all: true, verbatim: true });
    } catch (err) {
      throw new EgressError('Unreachable', `cannot resolve ${host} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  if (found.length === 0) throw new EgressError('Unreachable', `cannot resolve ${host}`);
  for (const a of found) {
    const problem = addressProblem(a.address, policy, name);
    if (problem) throw new EgressError('Forbidden', `refused to call ${host}: ${problem}`, 'ERR_EGRESS_REFUSED');
  }
  return found[0]!;
}

/** Checks, without a request, that `url`'s host resolves only to addresses `policy` allows
 *  (a provider's validate()). */
export async function checkAddress(url: URL, policy: AddressPolicy | undefined): Promise<void> {
  if (policy) await resolveChecked(url.hostname, policy);
}

/** A LookupFunction for Node's sockets: resolves and checks, then answers only the
 *  checked address. */
function checkedLookup(policy: AddressPolicy): LookupFunction {
  return (host, opts, cb) => {
    resolveChecked(host, policy).then(
      (r) => {
        if ((opts as { all?: boolean }).all) (cb as unknown as (e: null, a: Resolved[]) => void)(null, [r]);
        else cb(null, r.address, r.family);
      },
      // The EgressError itself reaches the request's 'error' handler: its code classifies it.
      (err: Error) => cb(err as NodeJS.ErrnoException, '', 0),
    );
  };
}

/** A socket that fails at once with `err` (what createConnection returns for a refused literal). */
function refusedSocket(err: Error): Socket {
  const s = new Socket();
  process.nextTick(() => s.destroy(err));
  return s;
}

type Done = (err: Error | null, stream: Duplex) => void;
type CreateConnection = (options: http.ClientRequestArgs, cb?: Done) => Duplex;

/** The check for an address literal (a name is checked by the lookup). */
function literalProblem(host: string | null | undefined, policy: AddressPolicy): EgressError | undefined {
  const name = bare(host ?? '');
  if (!isIP(name)) return undefined;
  const problem = addressProblem(name, policy, name);
  return problem ? new EgressError('Forbidden', `refused to call ${name}: ${problem}`, 'ERR_EGRESS_REFUSED') : undefined;
}

/** An https.Agent whose every socket passes the policy. */
class CheckedHttpsAgent extends https.Agent {
  constructor(private readonly policy: AddressPolicy, opts: https.AgentOptions = {}) {
    super({ ...opts, lookup: checkedLookup(policy) });
  }

  override createConnection(options: http.ClientRequestArgs, cb?: Done): Duplex {
    const refused = literalProblem(options.host ?? options.hostname, this.policy);
    if (refused) return refusedSocket(refused);
    return (super.createConnection as unknown as CreateConnection).call(this, options, cb);
  }
}

/** The same for plain http (a store the operator allowed over http://). */
class CheckedHttpAgent extends http.Agent {
  constructor(private readonly policy: AddressPolicy, opts: http.AgentOptions = {}) {
    super({ ...opts, lookup: checkedLookup(policy) } as http.AgentOptions);
  }

  override createConnection(options: http.ClientRequestArgs, cb?: Done): Duplex {
    const refused = literalProblem(options.host ?? options.hostname, this.policy);
    if (refused) return refusedSocket(refused);
    return (super.createConnection as unknown as CreateConnection).call(this, options, cb);
  }
}

/** Agents this module built: the only ones `request` sends on. */
const BUILT = new WeakSet<http.Agent>();

/** A pooled https agent for a client that keeps connections (the kubernetes provider): through
 *  the environment's proxy when one applies (the caller checks the address first:
 *  resolveChecked), checked sockets under a policy, Node's own otherwise. */
export function pooledHttpsAgent(url: string, policy: AddressPolicy | undefined, opts: https.AgentOptions & { keepAlive: boolean; maxSockets: number }): http.Agent {
  const agent = (proxyAgent(url, opts) as http.Agent | undefined) ?? (policy ? new CheckedHttpsAgent(policy, opts) : new https.Agent(opts));
  BUILT.add(agent);
  return agent;
}

/** https.request on an agent of this module (pooledHttpsAgent): a client that keeps its own
 *  pool sends through here, so its sockets are the ones the policy checked. */
export function requestOn(url: string, options: https.RequestOptions & { agent: http.Agent }, cb: (res: http.IncomingMessage) => void): http.ClientRequest {
  if (!BUILT.has(options.agent)) throw new Error('requestOn: the agent was not built by src/egress');
  return https.request(url, options, cb);
}

/** The agent for `url` under `policy`: checked sockets, or undefined (no policy: Node's own). */
export function checkedAgent(url: URL, policy: AddressPolicy | undefined, opts: https.AgentOptions = {}): http.Agent | undefined {
  if (!policy) return undefined;
  return url.protocol === 'https:' ? new CheckedHttpsAgent(policy, opts) : new CheckedHttpAgent(policy, opts);
}

// Which addresses a connection may go to, decided for every address a name resolves to
// (src/egress/connect.ts calls it right before connecting). One classification for every
// spelling: IPv4, IPv6, IPv4-mapped and -translated IPv6, 6to4, Teredo, NAT64 are judged by
// the IPv4 address they carry as well as by their own range (ipaddr.js names the ranges).
// Why: a store or generator spec a tenant writes names the address, and the controller's
// network position (the cloud metadata servers, the cluster's private Services, its own
// loopback) is not the tenant's to use. SECURITY.md, "The controller's network boundary".
import ipaddr from 'ipaddr.js';

/** What an address is, for the policy and for messages. */
export type AddressClass = 'public' | 'private' | 'metadata' | 'special';

/** Who may dial what. Absent policy (the agent) = the caller's own network position decides. */
export interface AddressPolicy {
  /** Loopback, private, shared (100.64/10) and unique-local addresses are allowed: an
   *  operator's ClusterSecretStore, or every store with --allow-private-store-addresses. */
  privateAddresses: boolean;
  /** Ranges and host names the operator opened (--egress-allow): a private address is
   *  allowed when it lies in one of the ranges or the host name matches. Never a metadata
   *  or special-purpose address. */
  allow?: EgressAllowList;
  /** How to allow a refused private address, told in the refusal (the controller's flags). */
  privateHint?: string;
}

/** The parsed --egress-allow list. */
export interface EgressAllowList {
  ranges: readonly [ipaddr.IPv4 | ipaddr.IPv6, number][];
  /** Exact host names, or `*.suffix` patterns; lower case. */
  hosts: readonly string[];
}

/** The cloud metadata services: instance credentials. Never dialled, whatever is opened.
 *  AWS/GCP/Azure/OpenStack 169.254.169.254 (and AWS's time/DNS neighbours under
 *  169.254.0.0/16, all link-local), AWS IPv6 IMDS fd00:ec2::254, ECS task credentials
 *  169.254.170.2, Alibaba 100.100.100.200, Oracle 192.0.0.192. */
const METADATA = ['fd00:ec2::254', '100.100.100.200', '192.0.0.192'].map((a) => ipaddr.parse(a).toString());

const PRIVATE_V4 = new Set(['loopback', 'private', 'carrierGradeNat']);
const PRIVATE_V6 = new Set(['loopback', 'uniqueLocal', 'deprecatedSiteLocal']);
/** IPv6 ranges whose last or inner 32 bits are an IPv4 address that is what is reached. */
const CARRIES_V4 = new Set(['ipv4Mapped', 'rfc6145', 'rfc6052', '6to4', 'teredo']);

function embeddedV4(v6: ipaddr.IPv6, range: string): ipaddr.IPv4 {
  const b = v6.toByteArray();
  if (range === '6to4') return new ipaddr.IPv4(b.slice(2, 6));
  // Teredo: the client's address is the last 32 bits, inverted.
  if (range === 'teredo') return new ipaddr.IPv4(b.slice(12, 16).map((x) => 255 - x));
  return new ipaddr.IPv4(b.slice(12, 16));
}

function classifyV4(v4: ipaddr.IPv4): AddressClass {
  if (METADATA.includes(v4.toString())) return 'metadata';
  const range = v4.range();
  if (range === 'linkLocal') return 'metadata';
  if (range === 'unicast') return 'public';
  return PRIVATE_V4.has(range) ? 'private' : 'special';
}

/** The class of one literal address; `special` for anything that does not parse. */
export function classify(address: string): AddressClass {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!ipaddr.isValid(bare)) return 'special';
  const ip = ipaddr.parse(bare);
  if (ip.kind() === 'ipv4') return classifyV4(ip as ipaddr.IPv4);
  const v6 = ip as ipaddr.IPv6;
  if (METADATA.includes(v6.toString())) return 'metadata';
  const range = v6.range();
  if (CARRIES_V4.has(range)) {
    // What is reached is the IPv4 address carried inside.
    return classifyV4(embeddedV4(v6, range));
  }
  if (range === 'linkLocal') return 'metadata';
  if (range === 'unicast') return 'public';
  return PRIVATE_V6.has(range) ? 'private' : 'special';
}

/** The address as the allow-list compares it: an IPv4 carried in IPv6 as that IPv4. */
function comparable(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const ip = ipaddr.parse(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  if (ip.kind() === 'ipv6') {
    const range = (ip as ipaddr.IPv6).range();
    if (CARRIES_V4.has(range)) return embeddedV4(ip as ipaddr.IPv6, range);
  }
  return ip;
}

function hostMatches(pattern: string, host: string): boolean {
  return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1 : host === pattern;
}

function opened(address: string, host: string | undefined, allow: EgressAllowList | undefined): boolean {
  if (!allow) return false;
  const name = host?.toLowerCase().replace(/\.$/, '');
  if (name && !ipaddr.isValid(name.replace(/^\[|\]$/g, '')) && allow.hosts.some((p) => hostMatches(p, name))) return true;
  const ip = comparable(address);
  return allow.ranges.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net as never, bits));
}

/** Why `address` (what `host` resolved to) may not be dialled under `policy`, or undefined. */
export function addressProblem(address: string, policy: AddressPolicy, host?: string): string | undefined {
  const cls = classify(address);
  const shown = address.replace(/^\[|\]$/g, '');
  if (cls === 'metadata') return `${shown} is a link-local or cloud metadata address (instance credentials live there); it is never dialled`;
  if (cls === 'special') return `${shown} is an unspecified, multicast, broadcast or reserved address; it is never dialled`;
  if (cls === 'private' && !policy.privateAddresses && !opened(address, host, policy.allow)) {
    return `${shown} is a loopback or private address; ${policy.privateHint ?? 'this store may not call it'}`;
  }
  return undefined;
}

/** Parses --egress-allow entries: CIDRs (`10.0.0.0/8`, `fd00::/8`), single addresses, host
 *  names and `*.suffix` patterns. Throws with the entry named. */
export function parseAllowList(entries: readonly string[]): EgressAllowList {
  const ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][] = [];
  const hosts: string[] = [];
  for (const raw of entries.map((e) => e.trim()).filter((e) => e !== '')) {
    if (raw.includes('://')) {
      throw new Error(`--egress-allow entry "${raw}" is a URL; name its host (or a CIDR range) instead`);
    } else if (raw.includes('/')) {
      try {
        ranges.push(ipaddr.parseCIDR(raw));
      } catch {
        throw new Error(`--egress-allow entry "${raw}" is not a CIDR range (e.g. 10.0.0.0/8)`);
      }
    } else if (ipaddr.isValid(raw.replace(/^\[|\]$/g, ''))) {
      const ip = ipaddr.parse(raw.replace(/^\[|\]$/g, ''));
      ranges.push([ip, ip.kind() === 'ipv4' ? 32 : 128]);
    } else if (/^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/i.test(raw)) {
      hosts.push(raw.toLowerCase().replace(/\.$/, ''));
    } else {
      throw new Error(`--egress-allow entry "${raw}" is neither a CIDR range, an address nor a host name`);
    }
  }
  // Metadata and special-purpose addresses stay refused whatever a range covers (addressProblem).
  return { ranges, hosts };
}

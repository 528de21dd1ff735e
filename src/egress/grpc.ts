// gRPC channels to an address a store spec names, opened only here. Under a policy the host
// is resolved and checked once (src/egress/connect.ts) and the channel dials that address
// literally (`ipv4:` / `ipv6:` targets: grpc-js does no lookup of its own), while TLS still
// verifies the certificate against the host name written in the spec and :authority
// carries it. Without a policy (the agent) grpc-js resolves the name as usual.
import { Client, type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';
import { resolveChecked } from './connect.js';
import type { AddressPolicy } from './policy.js';

/** `host:port` (IPv6 hosts in brackets) as the spec wrote it. */
export interface GrpcEndpoint {
  target: string;
}

function split(target: string): { host: string; port: string } {
  const i = target.lastIndexOf(':');
  return { host: target.slice(0, i), port: target.slice(i + 1) };
}

/** A grpc-js Client for `endpoint`; rejects with EgressError when the policy refuses it. */
export async function openGrpcClient(endpoint: GrpcEndpoint, credentials: ChannelCredentials, options: ChannelOptions, policy: AddressPolicy | undefined): Promise<Client> {
  if (!policy) return new Client(endpoint.target, credentials, options);
  const { host, port } = split(endpoint.target);
  const { address, family } = await resolveChecked(host, policy);
  const name = host.replace(/^\[|\]$/g, '');
  const literal = family === 6 ? `ipv6:[${address}]:${port}` : `ipv4:${address}:${port}`;
  return new Client(literal, credentials, {
    ...options,
    // The certificate is checked against the name the spec wrote, not the address dialled.
    'grpc.ssl_target_name_override': name,
    'grpc.default_authority': endpoint.target,
  });
}

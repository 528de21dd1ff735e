// The address policy (src/egress/policy.ts) over every spelling, without a connection: each
// address is judged by what it reaches — IPv4 carried inside IPv6 (mapped, translated, NAT64,
// 6to4, Teredo) as that IPv4 — and the operator's allow-list opens private addresses only.
import t from 'tap';
import { addressProblem, classify, parseAllowList, type AddressPolicy } from '../../../src/egress/policy.js';

const CASES: [string, ReturnType<typeof classify>][] = [
  ['8.8.8.8', 'public'], ['2001:4860:4860::8888', 'public'], ['2002:808:808::1', 'public'], ['64:ff9b::808:808', 'public'],
  ['127.0.0.1', 'private'], ['127.255.255.254', 'private'], ['10.0.0.1', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'], ['100.64.0.1', 'private'], ['::1', 'private'], ['fc00::1', 'private'], ['fd12:3456::1', 'private'], ['fec0::1', 'private'],
  ['::ffff:127.0.0.1', 'private'], ['::ffff:7f00:1', 'private'], ['[::ffff:10.0.0.1]', 'private'], ['::ffff:0:127.0.0.1', 'private'],
  ['64:ff9b::7f00:1', 'private'], ['2002:7f00:1::', 'private'], ['2002:c0a8:101::', 'private'],
  // Teredo: the client address is the last 32 bits inverted (80ff:fffe → 127.0.0.1).
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'private'],
  ['169.254.169.254', 'metadata'], ['169.254.170.2', 'metadata'], ['169.254.0.1', 'metadata'], ['fd00:ec2::254', 'metadata'],
  ['100.100.100.200', 'metadata'], ['192.0.0.192', 'metadata'], ['fe80::1', 'metadata'], ['fe80::1%eth0', 'metadata'],
  ['::ffff:169.254.169.254', 'metadata'], ['::ffff:a9fe:a9fe', 'metadata'], ['64:ff9b::a9fe:a9fe', 'metadata'], ['2002:a9fe:a9fe::', 'metadata'],
  ['0.0.0.0', 'special'], ['0.1.2.3', 'special'], ['::', 'special'], ['224.0.0.1', 'special'], ['239.255.255.250', 'special'], ['ff02::1', 'special'],
  ['255.255.255.255', 'special'], ['240.0.0.1', 'special'], ['not-an-address', 'special'], ['', 'special'],
];

t.test('every spelling is judged by what it reaches', async (t) => {
  for (const [address, want] of CASES) t.equal(classify(address), want, address);
});

t.test('strict, private-allowed and allow-listed policies', async (t) => {
  const strict: AddressPolicy = { privateAddresses: false, privateHint: 'ask the operator' };
  const open: AddressPolicy = { privateAddresses: true };
  const listed: AddressPolicy = { privateAddresses: false, allow: parseAllowList(['10.20.0.0/16', '127.0.0.1', 'fd00:1::/32', '*.svc.cluster.local', 'vault.internal']) };
  for (const [address, cls] of CASES) {
    const strictProblem = addressProblem(address, strict);
    if (cls === 'public') t.equal(strictProblem, undefined, `${address}: public is allowed`);
    else t.ok(strictProblem, `${address}: refused under the strict policy`);
    if (cls === 'private') {
      t.match(strictProblem, /loopback or private address; ask the operator/);
      t.equal(addressProblem(address, open), undefined, `${address}: allowed when private addresses are`);
    }
    if (cls === 'metadata') t.match(addressProblem(address, open), /cloud metadata address/, `${address}: never, whatever the policy`);
    if (cls === 'special') t.match(addressProblem(address, open), /never dialled/, `${address}: never`);
  }
  t.equal(addressProblem('10.20.3.4', listed), undefined, 'inside an opened range');
  t.ok(addressProblem('10.21.0.1', listed), 'outside it');
  t.equal(addressProblem('::ffff:127.0.0.1', listed), undefined, 'the opened address in its mapped spelling');
  t.ok(addressProblem('127.0.0.2', listed), 'a neighbour of the opened address');
  t.equal(addressProblem('fd00:1:2::3', listed), undefined, 'an opened IPv6 range');
  t.equal(addressProblem('10.96.0.10', listed, 'vault.vault.svc.cluster.local'), undefined, 'a host matching *.suffix');
  t.equal(addressProblem('10.96.0.10', listed, 'VAULT.internal.'), undefined, 'an exact host, any case, trailing dot');
  t.ok(addressProblem('10.96.0.10', listed, 'evilsvc.cluster.local'), 'the suffix is matched on a label boundary');
  t.ok(addressProblem('10.96.0.10', listed, 'svc.cluster.local'), 'the bare suffix is not a host under it');
  t.match(addressProblem('169.254.169.254', { privateAddresses: false, allow: parseAllowList(['169.254.0.0/16']) }), /metadata/, 'opening metadata does nothing');
  t.match(addressProblem('169.254.169.254', listed, 'metadata.svc.cluster.local'), /metadata/, 'nor does a host name resolving there');
});

t.test('the allow-list names what it refuses', async (t) => {
  t.throws(() => parseAllowList(['10.0.0.0/33']), /--egress-allow entry "10.0.0.0\/33" is not a CIDR range/);
  t.throws(() => parseAllowList(['http://vault:8200']), /is a URL; name its host/);
  t.throws(() => parseAllowList(['a b']), /neither/);
  t.same(parseAllowList(['', ' ']), { ranges: [], hosts: [] }, 'empty entries (an empty flag) open nothing');
});

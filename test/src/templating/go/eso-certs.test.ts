// ESO's filterCertChain rendered by the TypeScript engine against the Go oracle
// (test/support/templating/go-oracle/): certificates made by openssl per run (roots, intermediates,
// leaves; a SHA-1 root, a root without certificate signing in its key usage, a self-signed
// leaf), chains in several orders, inputs without certificates or with a broken one.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { b64 } from '../../../support/templating/go-corpus.js';
import { compare, topReasons } from '../../../support/templating/go-oracle/oracle.js';

const dir = mkdtempSync(join(tmpdir(), 'esi-certs-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
writeFileSync(join(dir, 'ca.ext'), 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n');
writeFileSync(join(dir, 'leaf.ext'), 'basicConstraints=CA:FALSE\nsubjectAltName=DNS:leaf.example\n');

function root(name: string, extra: string[] = [], key = ec) {
  ssl('req', '-x509', ...key, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', `/CN=${name}`, ...extra);
}
function signed(name: string, by: string, ext: string) {
  ssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
  ssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${by}.crt`, '-CAkey', `${by}.key`, '-set_serial', '7', '-days', '2', '-extfile', ext, '-out', `${name}.crt`);
}
root('root', ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign']);
root('rsaroot', ['-addext', 'basicConstraints=critical,CA:TRUE'], ['-newkey', 'rsa:2048', '-nodes']);
root('sha1root', ['-sha1', '-addext', 'basicConstraints=critical,CA:TRUE'], ['-newkey', 'rsa:2048', '-nodes']);
root('nosignroot', ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=digitalSignature']);
root('selfleaf', ['-addext', 'basicConstraints=CA:FALSE']);
root('noext', ['-addext', 'subjectAltName=DNS:x.example']);
signed('inter', 'root', 'ca.ext');
signed('leaf', 'inter', 'leaf.ext');
const pem = (n: string) => readFileSync(join(dir, `${n}.crt`), 'utf8');

t.test('filterCertChain renders as ESO renders it', async (t) => {
  const chains: Record<string, string> = {
    chain: pem('leaf') + pem('inter') + pem('root'),
    reversed: pem('root') + pem('inter') + pem('leaf'),
    mixed: `junk\n${readFileSync(join(dir, 'leaf.key'), 'utf8')}${pem('leaf')}${pem('rsaroot')}${pem('sha1root')}${pem('nosignroot')}${pem('selfleaf')}${pem('noext')}`,
    lower: pem('leaf').replace(/CERTIFICATE/g, 'certificate'),
    none: 'no certificates here',
    broken: '-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n',
    crlf: pem('inter').replace(/\n/g, '\r\n'),
  };
  const data = Object.fromEntries(Object.entries(chains).map(([k, v]) => [k, b64(v)]));
  const jobs = Object.keys(chains).flatMap((k) => ['leaf', 'intermediate', 'root', 'other'].map((role) => ({ name: `${k}-${role}`, source: `{{ .${k} | filterCertChain "${role}" }}` })));
  const c = compare([{ data, jobs }]);
  t.same(c.diffs, [], 'byte-identical output, failure where Go fails');
  t.equal(c.refused, 0, `none refused: ${topReasons(c)}`);
  t.ok(c.tsOfGoOk >= 12 && c.bothFail >= 10, `${c.tsOfGoOk} rendered, ${c.bothFail} failing as in Go`);
});

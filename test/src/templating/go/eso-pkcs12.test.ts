// ESO's pkcs12key, pkcs12keyPass, pkcs12cert and pkcs12certPass rendered by the TypeScript
// engine against the Go oracle (test/support/templating/go-oracle/, go-pkcs12 v0.5.0): archives made
// by the oracle itself (fullPemToPkcs12Pass: go-pkcs12's Modern encoder) and by openssl in
// its default (PBES2/AES-256, SHA-256 MAC), legacy 3DES/SHA-1, legacy RC2-40 (`-legacy`),
// unencrypted-certificate and no-MAC forms; RSA and EC keys; right, wrong and empty
// passwords; broken archives. An archive asking for more iterations than ESI allows is refused.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { b64 } from '../../../support/templating/go-corpus.js';
import { compare, oracle, topReasons } from '../../../support/templating/go-oracle/oracle.js';

const CANARY = 'canary-p12-pass-9d1';
const dir = mkdtempSync(join(tmpdir(), 'esi-p12-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
ssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=ca', '-addext', 'basicConstraints=critical,CA:TRUE');
ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'rsa.key', '-out', 'rsa.csr', '-subj', '/CN=rsa');
ssl('x509', '-req', '-in', 'rsa.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', '3', '-days', '2', '-out', 'rsa.crt');
ssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-384', '-nodes', '-keyout', 'ec.key', '-out', 'ec.csr', '-subj', '/CN=ec');
ssl('x509', '-req', '-in', 'ec.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', '4', '-days', '2', '-out', 'ec.crt');

function exported(name: string, key: string, pass: string, ...opts: string[]): Buffer {
  ssl('pkcs12', '-export', '-inkey', `${key}.key`, '-in', `${key}.crt`, '-certfile', 'ca.crt', '-passout', `pass:${pass}`, '-out', `${name}.p12`, ...opts);
  return readFileSync(join(dir, `${name}.p12`));
}

function byGo(): Record<string, Buffer> {
  const pem = (f: string) => b64(readFileSync(join(dir, f)));
  const [res] = oracle([{ data: { rsaCert: pem('rsa.crt'), rsaKey: pem('rsa.key'), chain: b64(readFileSync(join(dir, 'ec.crt'), 'utf8') + readFileSync(join(dir, 'ca.crt'), 'utf8')), ecKey: pem('ec.key') }, jobs: [
    { name: 'a', source: `{{ fullPemToPkcs12Pass .chain .ecKey "${CANARY}" }}` },
    { name: 'b', source: '{{ pemToPkcs12 .rsaCert .rsaKey }}' },
  ] }]);
  return { 'go-ec-pass': Buffer.from(Buffer.from(res![0]!.output!, 'base64').toString(), 'base64'), 'go-rsa-nopass': Buffer.from(Buffer.from(res![1]!.output!, 'base64').toString(), 'base64') };
}

t.test('pkcs12key and pkcs12cert read archives as ESO reads them', async (t) => {
  const archives: Record<string, Buffer> = {
    ...byGo(),
    'ssl-rsa-pass': exported('a', 'rsa', CANARY),
    'ssl-ec-nopass': exported('b', 'ec', ''),
    'ssl-3des': exported('c', 'rsa', CANARY, '-keypbe', 'PBE-SHA1-3DES', '-certpbe', 'PBE-SHA1-3DES', '-macalg', 'sha1'),
    'ssl-plaincert': exported('d', 'ec', CANARY, '-certpbe', 'NONE'),
    'ssl-nomac-nopass': exported('e', 'ec', '', '-nomac', '-certpbe', 'NONE', '-keypbe', 'NONE'),
    'ssl-sha512': exported('f', 'ec', CANARY, '-macalg', 'sha512', '-iter', '3000'),
    'ssl-legacy-rc2': exported('g', 'rsa', CANARY, '-legacy'),
    garbage: Buffer.from(`${CANARY} not an archive`),
  };
  archives['truncated'] = archives['ssl-rsa-pass']!.subarray(0, 200);
  const flipped = Buffer.from(archives['ssl-rsa-pass']!);
  flipped[flipped.length - 40]! ^= 1;
  archives['flipped'] = flipped;
  const data = Object.fromEntries(Object.entries(archives).map(([k, v]) => [k, v.toString('base64')]));
  const jobs = Object.keys(archives).flatMap((k) => [
    `{{ index . "${k}" | pkcs12key }}`, `{{ index . "${k}" | pkcs12cert }}`,
    `{{ index . "${k}" | pkcs12keyPass "${CANARY}" }}`, `{{ index . "${k}" | pkcs12certPass "${CANARY}" }}`, `{{ pkcs12certPass "wrong" (index . "${k}") }}`,
  ].map((source, i) => ({ name: `${k}-${i}`, source })));
  const c = compare([{ data, jobs }]);
  t.same(c.diffs, [], 'byte-identical PEM, failure where Go fails');
  t.equal(c.refused, 0, `none refused: ${topReasons(c)}`);
  t.ok(c.tsOfGoOk >= 16, `${c.tsOfGoOk} decoded, ${c.bothFail} failing as in Go`);
});

t.test('a failing pkcs12key quotes neither the archive nor the password', async (t) => {
  const { renderGoTemplates } = await import('../../../../src/templating/go/index.js');
  for (const source of ['{{ .p | pkcs12key }}', `{{ .p | pkcs12keyPass "${CANARY}" }}`]) {
    try {
      renderGoTemplates([{ name: 'p', source }], { p: Buffer.from(`${CANARY} junk`) });
      t.fail('renders');
    } catch (e) {
      t.notMatch(String((e as Error).message), CANARY, source);
    }
  }
});

t.test('an archive asking for more iterations than ESI allows is refused before the work', async (t) => {
  const { renderGoTemplates } = await import('../../../../src/templating/go/index.js');
  const { MAX_ITERATIONS } = await import('../../../../src/templating/go/eso-pkcs12.js');
  const p12 = exported('h', 'ec', CANARY, '-iter', String(MAX_ITERATIONS + 1));
  t.throws(() => renderGoTemplates([{ name: 'p', source: `{{ .p | pkcs12keyPass "${CANARY}" }}` }], { p: p12 }),
    { message: new RegExp(`pkcs12keyPass of an archive asking for more than ${MAX_ITERATIONS} iterations`) });
});

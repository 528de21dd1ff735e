// ESO's pemTruststoreToPKCS12[Pass] by round trip (random salts): openssl lists the same
// certificates and bag attributes (Java's trust attribute, the friendly name Go words from
// the subject) for the TypeScript engine's trust store as for the Go oracle's; failures
// where Go fails; a subject this port cannot word as Go does is refused.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderGoTemplates, parseGoTemplates } from '../../../../src/templating/go/index.js';
import { b64 } from '../../../support/templating/go-corpus.js';
import { oracle } from '../../../support/templating/go-oracle/oracle.js';

const dir = mkdtempSync(join(tmpdir(), 'esi-ts-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
const ca = (name: string, subj: string) => {
  ssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', subj, '-multivalue-rdn');
  return readFileSync(join(dir, `${name}.crt`), 'utf8');
};
const plain = ca('a', '/CN=root one');
const rich = ca('b', '/C=US/ST=Cal/L=Town/O=Org\\, Inc./OU=x/OU=y/CN=#lead+SERIALNUMBER=42/street=1 Main');
const spaced = ca('c', '/O= spaced ;<>"/CN=ünï');
const email = ca('d', '/CN=e/emailAddress=a@example.org');

const PASS = 'trust-pass';
const jobs = [{ name: 'a', source: '{{ pemTruststoreToPKCS12 .bundle }}' }, { name: 'b', source: `{{ pemTruststoreToPKCS12Pass .bundle "${PASS}" }}` }];
const listed = (archiveB64: string, pass: string) => {
  writeFileSync(join(dir, 'x.p12'), Buffer.from(archiveB64, 'base64'));
  return ssl('pkcs12', '-in', 'x.p12', '-nokeys', '-passin', `pass:${pass}`);
};

t.test('openssl lists the same trust store from ESI as from Go', async (t) => {
  const bundle = plain + rich + '\n\n' + spaced;
  const goOut = oracle([{ data: { bundle: b64(bundle) }, jobs }])[0]!.map((r) => Buffer.from(r.output!, 'base64').toString());
  const tsOut = jobs.map((j) => new TextDecoder().decode(renderGoTemplates([j], { bundle: Buffer.from(bundle) })[0]));
  [0, 1].forEach((i) => {
    const pass = i ? PASS : '';
    const want = listed(goOut[i]!, pass);
    t.match(want, /friendlyName: CN=root one/, 'friendly names as Go words them');
    t.match(want, /2\.16\.840\.1\.113894\.746875\.1\.1/, "Java's trust attribute");
    t.equal(listed(tsOut[i]!, pass), want, `${jobs[i]!.source}: same certificates and attributes`);
  });
});

t.test('fails where Go fails; a subject it cannot word as Go does is refused', async (t) => {
  for (const bundle of [`${plain}junk`, '-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n']) {
    t.ok(oracle([{ data: { bundle: b64(bundle) }, jobs }])[0]!.every((r) => r.error), 'Go fails');
    t.throws(() => renderGoTemplates([jobs[0]!], { bundle: Buffer.from(bundle) }), /pemTruststoreToPKCS12/);
  }
  t.same(parseGoTemplates(jobs), [], 'parsed');
  t.throws(() => renderGoTemplates([jobs[0]!], { bundle: Buffer.from(email) }), /not supported by ESI: pemTruststoreToPKCS12 of a certificate subject/);
});

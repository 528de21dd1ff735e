// ESO's rsaDecrypt rendered by the TypeScript engine against the Go oracle: RSA-OAEP with
// each hash name, PKCS#8 and PKCS#1 keys, a wrong hash, a wrong key, an EC key, a small key,
// the None scheme and an unknown one; byte-identical output, failure where Go fails.
import t from 'tap';
import { constants, generateKeyPairSync, publicEncrypt } from 'node:crypto';
import { b64 } from '../../../support/templating/go-corpus.js';
import { compare, topReasons } from '../../../support/templating/go-oracle/oracle.js';

const SECRET = 'plaintext-canary-é';
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
const small = generateKeyPairSync('rsa', { modulusLength: 768 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const enc = (hash: string, key = rsa.publicKey) => publicEncrypt({ key, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: hash }, Buffer.from(SECRET));
const pem = (k: typeof rsa.privateKey, type: 'pkcs8' | 'pkcs1' | 'sec1' = 'pkcs8') => k.export({ type, format: 'pem' }) as string;

t.test('rsaDecrypt renders as ESO renders it', async (t) => {
  const data = {
    c256: enc('sha256').toString('base64'), c1: enc('sha1').toString('base64'), c512: enc('sha512').toString('base64'),
    csmall: enc('sha256', small.publicKey).toString('base64'),
    k8: b64(pem(rsa.privateKey)), k1: b64(pem(rsa.privateKey, 'pkcs1')), kother: b64(pem(other.privateKey)), kec: b64(pem(ec.privateKey)),
    ksmall: b64(pem(small.privateKey)), junk: b64('not a key'),
  };
  const sources = [
    '{{ rsaDecrypt "RSA-OAEP" "SHA256" .c256 .k8 }}', '{{ rsaDecrypt "RSA-OAEP" "SHA1" .c1 .k1 }}', '{{ rsaDecrypt "RSA-OAEP" "SHA512" .c512 .k8 }}',
    '{{ rsaDecrypt "RSA-OAEP" "None" .c256 .k8 }}', '{{ .k8 | rsaDecrypt "RSA-OAEP" "SHA1" .c256 }}', '{{ rsaDecrypt "RSA-OAEP" "SHA256" .c256 .kother }}',
    '{{ rsaDecrypt "RSA-OAEP" "SHA256" .c256 .kec }}', '{{ rsaDecrypt "RSA-OAEP" "SHA256" .c256 .junk }}', '{{ rsaDecrypt "None" "SHA256" "as is" .junk }}',
    '{{ rsaDecrypt "RSA-PKCS1" "SHA256" .c256 .k8 }}', '{{ rsaDecrypt "RSA-OAEP" "SHA256" .csmall .ksmall }}', '{{ rsaDecrypt "RSA-OAEP" "SHA256" .c256 .k8 | b64enc }}',
  ];
  const c = compare([{ data, jobs: sources.map((source, i) => ({ name: `rsa-${i}`, source })) }]);
  t.same(c.diffs, [], 'byte-identical output, failure where Go fails');
  t.equal(c.refused, 0, `none refused: ${topReasons(c)}`);
  t.equal(c.tsOfGoOk, 6, `${c.tsOfGoOk} decrypted, ${c.bothFail} failing as in Go`);
});

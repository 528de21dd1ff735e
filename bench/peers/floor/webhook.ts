// Node.js's own floor for an admission webhook: a bare `node` (node:https only, no framework,
// no product code) that answers every AdmissionReview with one fixed answer — ESI's own answer
// to the benchmark's pod, captured once by webhooks.ts, with the request's uid put in. It reads
// the body, parses it (a webhook must, to find the uid) and writes the same bytes ESI writes:
// what an admission costs Node.js itself, measured by the same load generator and procstat as
// the two webhooks. bench/peers/floors.ts compiles this file to plain JavaScript (type
// stripping only) and starts it with the webhook's node binary and flags.
//
//   node floor-webhook.mjs <port> <cert file> <key file> <answer file>
// The answer file holds ESI's answer with the uid replaced by the text @UID@.
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';

const [port, certFile, keyFile, answerFile] = process.argv.slice(2) as [string, string, string, string];
const [head, tail] = readFileSync(answerFile, 'utf8').split('@UID@').map((s) => Buffer.from(s)) as [Buffer, Buffer];

const server = createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request?: { uid?: string } };
    const body = Buffer.concat([head, Buffer.from(String(review.request?.uid)), tail]);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
  });
});
server.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));

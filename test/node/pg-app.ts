// A database client app for the test node: the node image has Node.js but no PostgreSQL
// client, so the app speaks the PostgreSQL wire protocol itself (startup, SCRAM-SHA-256 as
// the test server's pg_hba asks, one query), with only Node's own modules. It reads its
// credential from the files the agent wrote, as an app would, and prints hashes only.
import type { V1Container } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { SECRETS_DIR } from './fixture.js';

/** The app's `login` for one connection: `ok <hash of current_user>` or `failed <SQLSTATE>`. */
const LOGIN = String.raw`
function login(user, password) {
  return new Promise((resolve) => {
    const s = net.connect(PG_PORT, PG_HOST);
    const first = 'n=,r=' + crypto.randomBytes(18).toString('base64');
    let buf = Buffer.alloc(0), done = false;
    const finish = (r) => { if (!done) { done = true; s.destroy(); resolve(r); } };
    const msg = (type, body) => { const h = Buffer.alloc(5); h.write(type, 0); h.writeInt32BE(body.length + 4, 1); return Buffer.concat([h, body]); };
    const hmac = (k, m) => crypto.createHmac('sha256', k).update(m).digest();
    s.setTimeout(15000, () => finish('failed timeout'));
    s.on('error', (e) => finish('failed ' + e.code));
    s.on('connect', () => {
      const params = Buffer.from('user\0' + user + '\0database\0postgres\0\0');
      const h = Buffer.alloc(8); h.writeInt32BE(params.length + 8, 0); h.writeInt32BE(196608, 4);
      s.write(Buffer.concat([h, params]));
    });
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 5 && buf.length >= buf.readInt32BE(1) + 1) {
        const len = buf.readInt32BE(1), type = String.fromCharCode(buf[0]), body = buf.subarray(5, len + 1);
        buf = buf.subarray(len + 1);
        if (type === 'E') return finish('failed ' + ((/C([0-9A-Z]{5})\0/.exec(body.toString('latin1')) || [])[1] || '?'));
        if (type === 'D') return finish('ok ' + H(body.subarray(6, 6 + body.readInt32BE(2)).toString()));
        if (type !== 'R') continue;
        const code = body.readInt32BE(0);
        if (code === 10) { // SASL: SCRAM-SHA-256 (RFC 5802), no channel binding
          const data = Buffer.from('n,,' + first), l = Buffer.alloc(4); l.writeInt32BE(data.length, 0);
          s.write(msg('p', Buffer.concat([Buffer.from('SCRAM-SHA-256\0'), l, data])));
        } else if (code === 11) {
          const serverFirst = body.subarray(4).toString();
          const a = Object.fromEntries(serverFirst.split(',').map((kv) => [kv[0], kv.slice(2)]));
          const salted = crypto.pbkdf2Sync(password, Buffer.from(a.s, 'base64'), Number(a.i), 32, 'sha256');
          const clientKey = hmac(salted, 'Client Key');
          const withoutProof = 'c=biws,r=' + a.r;
          const sig = hmac(crypto.createHash('sha256').update(clientKey).digest(), first + ',' + serverFirst + ',' + withoutProof);
          s.write(msg('p', Buffer.from(withoutProof + ',p=' + Buffer.from(clientKey.map((b, i) => b ^ sig[i])).toString('base64'))));
        } else if (code === 0) {
          s.write(msg('Q', Buffer.from('SELECT current_user\0')));
        } else if (code !== 12) return finish('failed auth' + code);
      }
    });
  });
}`;

/** The app: prints `cred <hash(username)> <hash(password)> <password length>` from the
 *  agent's files `<SECRETS_DIR>/<dir>/username|password` when it starts, then every 3 s logs
 *  in to PostgreSQL at `pg` with the files' current content and prints
 *  `login ok <hash(current_user)> <seconds since start>` (or `login failed <SQLSTATE> …`).
 *  Exits on SIGTERM (as PID 1 it would otherwise ignore it), so the pod ends promptly. */
export function pgApp(image: string, pg: { host: string; port: number }, dir = 'db'): V1Container {
  const script = [
    "const fs = require('fs'), crypto = require('crypto'), net = require('net');",
    "const H = (s) => crypto.createHash('sha256').update(s).digest('hex').slice(0, 16);",
    `const PG_HOST = ${JSON.stringify(pg.host)}, PG_PORT = ${pg.port}, DIR = ${JSON.stringify(`${SECRETS_DIR}/${dir}`)};`,
    "process.on('SIGTERM', () => process.exit(0));",
    LOGIN,
    "const read = (f) => { try { return fs.readFileSync(DIR + '/' + f, 'utf8'); } catch (e) { return undefined; } };",
    "const started = Date.now(), u = read('username'), p = read('password');",
    "console.log(u === undefined || p === undefined ? 'cred missing' : 'cred ' + H(u) + ' ' + H(p) + ' ' + p.length);",
    "const tick = async () => console.log('login ' + await login(read('username') || '', read('password') || '') + ' ' + Math.round((Date.now() - started) / 1000));",
    'tick(); setInterval(tick, 3000);',
  ].join('\n');
  return {
    name: 'app', image, imagePullPolicy: 'Never', command: ['/nodejs/bin/node', '-e', script],
    securityContext: { runAsNonRoot: true, runAsUser: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
  };
}

/** Whether `text` holds, anywhere, the value whose `hashOf` (16 hex digits) and length the
 *  app printed: every substring of that length is hashed, so the test can look for a value
 *  it never sees itself. */
export function holdsValue(text: string, hash: string, length: number): boolean {
  for (let i = 0; i + length <= text.length; i++) {
    if (createHash('sha256').update(text.slice(i, i + length)).digest('hex').slice(0, 16) === hash) return true;
  }
  return false;
}

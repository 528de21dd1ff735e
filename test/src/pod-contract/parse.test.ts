// The annotation table read without a cluster (src/pod-contract/parse.ts): defaults, and every
// bad value reported at once.
import t from 'tap';
import { parseAnnotations } from '../../../src/pod-contract/parse.js';

t.test('defaults come from the table', async (t) => {
  const r = parseAnnotations({ 'esi.dev/secrets': 'a, b' });
  t.ok(r.ok);
  if (!r.ok) return;
  t.same(r.request.secrets, ['a', 'b']);
  t.equal(r.request.mode, 'native-sidecar');
  t.equal(r.request.mountPath, '/var/run/secrets/esi');
  t.equal(r.request.refreshSeconds, 3600);
  t.equal(r.request.fileMode, 0o444);
  t.equal(r.request.containers, undefined);
});

t.test('every bad value is reported at once, naming the annotation', async (t) => {
  const r = parseAnnotations({
    'esi.dev/secrets': 'Bad_Name', 'esi.dev/mount-path': 'relative', 'esi.dev/file-mode': '0666',
    'esi.dev/refresh-interval': '5s', 'esi.dev/agent-port': '80', 'esi.dev/volume-size-limit': '10Gi',
    'esi.dev/template-../etc/passwd': 'x', 'esi.dev/on-change': 'signal:SIGKILL:app',
  });
  t.notOk(r.ok);
  if (r.ok) return;
  const text = r.problems.join('\n');
  for (const re of [/esi\.dev\/secrets: "Bad_Name" is not a valid ExternalSecret name/, /esi\.dev\/mount-path: must be an absolute path/,
    /esi\.dev\/file-mode: must not be group- or world-writable/, /esi\.dev\/refresh-interval: must be at least 10s/,
    /esi\.dev\/agent-port: must be a port number between 1024 and 65535/, /esi\.dev\/volume-size-limit: "10Gi" is out of the allowed range/,
    /esi\.dev\/template-\.\.\/etc\/passwd: "\.\.\/etc\/passwd" is not a valid file name/, /signal SIGKILL is not allowed/]) t.match(text, re);
  t.equal(r.problems.length, 8, 'one problem per bad annotation');
});

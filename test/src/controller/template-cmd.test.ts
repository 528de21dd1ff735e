// `esi template` the way a user runs it: files on disk, the real command, the Secret it prints
// parsed back and decoded; failures by exit code and message, never quoting a value.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { parse, stringify } from 'yaml';
import { ESI, ROOT } from '../../support/webhook.js';

const CANARY = 'tpl-canary-3f9d0c';
const dir = mkdtempSync(join(tmpdir(), 'esi-template-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : stringify(content));
  return path;
}

async function esi(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(ESI[0]!, [ESI[1]!, 'template', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  return { code, stdout, stderr };
}

const decoded = (s: { data?: Record<string, string> }) =>
  Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));

function es(name: string, template: object, annotations: Record<string, string> = {}) {
  return {
    apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret',
    metadata: { name, namespace: 'orders', annotations },
    spec: { secretStoreRef: { name: 'vault', kind: 'ClusterSecretStore' }, target: { name: `${name}-secret`, template }, dataFrom: [{ extract: { key: 'db' } }] },
  };
}

const data = file('data.yaml', { username: 'orders', password: `${CANARY}-pw`, port: 5432 });

t.test('a Go template (ESO default): the Secret the reconciler would write', async (t) => {
  const f = file('go.yaml', es('db', {
    type: 'kubernetes.io/basic-auth',
    metadata: { labels: { app: '{{ .username }}' } },
    data: { username: '{{ .username }}', password: '{{ .password }}', dsn: 'postgres://{{ .username }}:{{ .password | urlquery }}@db:{{ .port }}/{{ .username | upper }}' },
  }));
  const r = await esi('-f', f, '--data', data);
  t.equal(r.code, 0, r.stderr);
  const secret = parse(r.stdout) as { kind: string; type: string; metadata: { name: string; namespace: string; labels: Record<string, string> }; data: Record<string, string> };
  t.match(secret, { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/basic-auth', metadata: { name: 'db-secret', namespace: 'orders', labels: { app: 'orders', 'esi.dev/managed': 'true', 'esi.dev/store': 'vault', 'esi.dev/store-kind': 'ClusterSecretStore' } } });
  t.same(decoded(secret), { username: 'orders', password: `${CANARY}-pw`, dsn: `postgres://orders:${CANARY}-pw@db:5432/ORDERS` });
});

t.test('handlebars on opt-in; --set wins over --data; -o json', async (t) => {
  const f = file('hb.yaml', es('hb', { data: { greeting: 'hello {{username}}', pw: '{{password}}' } }, { 'esi.dev/template-engine': 'handlebars' }));
  const r = await esi('-f', f, '--data', data, '--set', 'username=payments', '-o', 'json');
  t.equal(r.code, 0, r.stderr);
  t.same(decoded(JSON.parse(r.stdout) as { data: Record<string, string> }), { greeting: 'hello payments', pw: `${CANARY}-pw` });
});

t.test('templateFrom reads its ConfigMap and Secret from the files', async (t) => {
  const f = file('from.yaml', [
    es('from', { templateFrom: [{ configMap: { name: 'tpl', items: [{ key: 'config.ini' }] } }, { secret: { name: 'tpl-secret', items: [{ key: 'extra' }] } }] }),
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'tpl', namespace: 'orders' }, data: { 'config.ini': '[db]\nuser = {{ .username }}\n' } },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tpl-secret', namespace: 'orders' }, data: { extra: Buffer.from('{{ .port }}').toString('base64') } },
  ].map((o) => stringify(o)).join('---\n'));
  const r = await esi('-f', f, '--data', data);
  t.equal(r.code, 0, r.stderr);
  t.same(decoded(parse(r.stdout) as { data: Record<string, string> }), { 'config.ini': '[db]\nuser = orders\n', extra: '5432' });
  const missing = await esi('-f', file('from-missing.yaml', es('from', { templateFrom: [{ configMap: { name: 'absent', items: [{ key: 'k' }] } }] })), '--data', data);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /ConfigMap "orders\/absent" \(spec\.target\.template\.templateFrom\[0\]\.configMap\.name\) not found/);
});

t.test('a failing template exits 1, names the template, never quotes the value', async (t) => {
  const f = file('bad.yaml', es('bad', { data: { decoded: '{{ .password }}{{ fail "apiKey is needed" }}' } }));
  const r = await esi('-f', f, '--data', data);
  t.equal(r.code, 1);
  t.match(r.stderr, /^esi template: .*bad.*decoded.*apiKey is needed/m);
  t.notMatch(r.stdout + r.stderr, CANARY);
  const syntax = await esi('-f', file('syntax.yaml', es('syntax', { data: { x: '{{ .password ' } })), '--data', data);
  t.equal(syntax.code, 1);
  t.match(syntax.stderr, /syntax.*x/);
});

t.test('unusable input exits 2 with a message that quotes no value', async (t) => {
  t.equal((await esi()).code, 2, 'no -f');
  const two = await esi('-f', file('two.yaml', `${stringify(es('a', {}))}---\n${stringify(es('b', {}))}`), '--data', data);
  t.equal(two.code, 2);
  t.match(two.stderr, /expected exactly one ExternalSecret in the input, found 2/);
  const badData = await esi('-f', file('ok.yaml', es('ok', { data: { x: '{{ .a }}' } })), '--data', file('bad-data.yaml', `password: "${CANARY}\n  : [`));
  t.equal(badData.code, 2);
  t.match(badData.stderr, /--data .*not one YAML or JSON document|must be a map/);
  t.notMatch(badData.stderr, CANARY);
  const badSet = await esi('-f', file('ok2.yaml', es('ok', {})), '--set', 'novalue');
  t.equal(badSet.code, 2);
  t.match(badSet.stderr, /--set must be KEY=VALUE/);
  t.equal((await esi('-f', file('ok3.yaml', es('ok', {})), '-o', 'xml')).code, 2);
});

// src/log.ts as a reader of the logs meets it: JSON lines with the level's name and an ISO
// time by default, `time LEVEL component: msg k=v` lines with ESI_LOG_FORMAT=text, and a
// clear error naming the variable for a level or format it does not know.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { logSettings, textLine } from '../../src/log.js';

const ROOT = join(import.meta.dirname, '../..');
const SCRIPT = "import('./src/log.ts').then((m) => { const l = m.createLogger('controller'); l.info({ key: 'ns/es', n: 3, s: 'a b' }, 'reconciled'); l.warn('slow'); l.debug('hidden'); l.flush(); })";

function run(env: Record<string, string>): string[] {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', SCRIPT], { cwd: ROOT, env: { ...process.env, ESI_LOG_LEVEL: '', ESI_LOG_FORMAT: '', ...env }, encoding: 'utf8' });
  return r.stdout.split('\n').filter(Boolean);
}

t.test('JSON by default: level names and ISO times', async (t) => {
  const lines = run({ ESI_LOG_LEVEL: 'info' }).map((l) => JSON.parse(l) as Record<string, unknown>);
  t.equal(lines.length, 2, 'debug is below info');
  t.match(lines[0], { level: 'info', component: 'controller', msg: 'reconciled', key: 'ns/es', n: 3 });
  t.match(lines[1], { level: 'warn', msg: 'slow' });
  t.match(lines[0]!.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'an ISO time');
});

t.test('text on request', async (t) => {
  const lines = run({ ESI_LOG_LEVEL: 'info', ESI_LOG_FORMAT: 'text' });
  t.match(lines[0], /^\d{4}-\d\d-\d\dT\S+Z INFO {2}controller: reconciled key=ns\/es n=3 s="a b"$/);
  t.match(lines[1], /^\S+ WARN {2}controller: slow$/);
  t.equal(textLine('not json'), 'not json', 'a line that is not JSON passes unchanged');
});

t.test('unknown words are named', async (t) => {
  t.throws(() => logSettings('verbose', 'json'), /ESI_LOG_LEVEL "verbose" must be one of fatal, error, warn, info, debug, trace, silent/);
  t.throws(() => logSettings('info', 'xml'), /ESI_LOG_FORMAT "xml" must be json or text/);
  t.same(logSettings('debug', 'text'), { level: 'debug', format: 'text' });
});

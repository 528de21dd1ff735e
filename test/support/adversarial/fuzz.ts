// A seeded generator of hostile pods: what a pod creator controls (annotations of every
// kind, values from plausible to absurd, odd pod shapes) mixed from a dictionary of
// known-dangerous fragments. The same seed gives the same inputs on every run, so a
// failure reproduces with its seed and index.
import type { V1Pod } from '@kubernetes/client-node';
import type { Rng } from '../../../bench/lib/rng.js';
import { ANNOTATIONS, TEMPLATE_PREFIX } from '../../../src/pod-contract/annotations.js';
import { GOOD_SECRETS, NS } from './world.js';

/** Pieces of handlebars, paths and values known to hurt parsers, writers and checks. */
const TEMPLATE_ATOMS = [
  '{{', '}}', '{{{', '}}}', '{{#if a}}', '{{/if}}', '{{#each db}}', '{{/each}}', '{{else}}', '{{^}}', '{{db.password}}', '{{[db].x}}',
  '(', ')', '{{x (a (b (c', '{{!--', '--}}', '{{> p}}', '{{#*inline "p"}}', '{{/inline}}', '{{{{raw}}}}', '\\{{', '~', '{{lookup db "x"}}',
  '{{ .password }}', 'as |x|', '"', "'", '[', ']', '\n', '\u0000', '\u2028', 'é', '../', '@root', 'this', 'constructor', '__proto__',
];
const VALUE_ATOMS = [
  '', ' ', '0', '-1', '1e309', 'NaN', '10s', '1h', '720h', '99999999h', '0.001ms', '5m', '0444', '0777', '0400', '8099', '65536', '80',
  '32Mi', '10Gi', '1e3', 'native-sidecar', 'init-only', 'sidecar', 'daemon', '/var/run/esi', '/var/run/secrets/esi', '/../etc', '/a/../b',
  '/', 'relative', 'http://127.0.0.1:8080/reload', 'https://localhost/x', 'http://10.0.0.1/x', 'http://[::1]:1/', 'http://127.1/',
  'signal:SIGHUP:nginx', 'signal:SIGKILL:x', 'signal:SIGHUP:a/b', 'app', 'sidecar-1', 'APP', 'a,b,a', ',', 'db', 'db,api', 'x'.repeat(300),
  '\u0000', '../x', 'sts.amazonaws.com', 'a b',
];
const NAMES = [...ANNOTATIONS.map((a) => a.name), 'esi.dev/secret', 'esi.dev/modes', 'esi.dev/', 'esi.dev/injected', 'other.io/x'];
const FILES = ['app.conf', 'db', '..data', '.', '..', '.env', 'a/b', 'x'.repeat(254), 'ok-file_1.txt', '-', '_x', 'é'];

function pieces(rng: Rng, atoms: readonly string[], max: number): string {
  let out = '';
  for (let i = rng.int(0, max); i > 0; i--) out += rng.pick(atoms);
  return out;
}

function template(rng: Rng): string {
  const r = rng.next();
  // A large hostile one: repeated nesting / long lists (the shapes that stalled handlebars).
  if (r < 0.05) return rng.pick(['{{#if a}}', '{{x (a ', '{{x a a a a a a a a ', '{{a}}', '{{!x}}']).repeat(rng.int(1, 4000));
  if (r < 0.45) return rng.pick(['{{db.password}}', 'user={{db.password}}\n{{#if db.password}}x{{else}}y{{/if}}', '{{#each db}}{{@key}}={{this}}\n{{/each}}']);
  return pieces(rng, TEMPLATE_ATOMS, 12);
}

/** Values each annotation accepts: half of the fuzzed values are plausible. */
const GOOD: Record<string, string[]> = {
  'esi.dev/mode': ['native-sidecar', 'init-only', 'sidecar'],
  'esi.dev/mount-path': ['/var/run/secrets/esi', '/etc/app/secrets', '/data/x'],
  'esi.dev/containers': ['app', 'app,sidecar-1'],
  'esi.dev/refresh-interval': ['10s', '15m', '1h', '24h', '1h30m'],
  'esi.dev/file-mode': ['0444', '0440', '0400', '400'],
  'esi.dev/on-change': ['http://127.0.0.1:8080/reload', 'http://localhost/x', 'http://[::1]:9000/', 'signal:SIGHUP:nginx', 'signal:SIGUSR1:app'],
  'esi.dev/token-audience': ['vault', 'sts.amazonaws.com'],
  'esi.dev/volume-size-limit': ['4Mi', '64Ki', '1Gi'],
  'esi.dev/agent-port': ['8099', '1024', '65535'],
  'esi.dev/agent-cpu-request': ['5m', '1', '100m'],
  'esi.dev/agent-memory-request': ['32Mi', '16Mi'],
  'esi.dev/agent-memory-limit': ['96Mi', '1Gi'],
};

function annotationValue(rng: Rng, name: string): unknown {
  if (rng.chance(0.02)) return rng.pick([5, null, true, { a: 1 }, ['x']]);
  if (GOOD[name] && rng.chance(0.6)) return rng.pick(GOOD[name]);
  if (name === 'esi.dev/secrets') {
    return rng.chance(0.7) ? rng.sample(GOOD_SECRETS, rng.int(1, 3)).join(',') : pieces(rng, [...VALUE_ATOMS, ...GOOD_SECRETS], 3);
  }
  if (rng.chance(0.5)) return rng.pick(VALUE_ATOMS);
  return pieces(rng, VALUE_ATOMS, 3);
}

/** One hostile (or, often, perfectly good) pod. */
export function fuzzPod(rng: Rng): V1Pod {
  const annotations: Record<string, unknown> = {};
  if (rng.chance(0.9)) annotations['esi.dev/secrets'] = annotationValue(rng, 'esi.dev/secrets');
  for (let i = rng.int(0, 4); i > 0; i--) {
    const name = rng.chance(0.8) ? rng.pick(Object.keys(GOOD)) : rng.pick(NAMES);
    annotations[name] = annotationValue(rng, name);
  }
  for (let i = rng.chance(0.4) ? rng.int(1, 3) : 0; i > 0; i--) annotations[`${TEMPLATE_PREFIX}${rng.pick(FILES)}`] = template(rng);
  if (rng.chance(0.01)) for (let i = 0; i < 2000; i++) annotations[`esi.dev/x${i}`] = 'y';
  const containers: unknown[] = [{ name: 'app', image: 'app' }];
  if (rng.chance(0.3)) containers.push({ name: rng.pick(['sidecar-1', 'esi-agent', 'app', 'APP']), image: 'x', volumeMounts: [{ name: 'v', mountPath: rng.pick(['/var/run/secrets/esi', '/data']) }] });
  if (rng.chance(0.02)) containers.push(rng.pick([null, 'x', { name: 5 }, { name: 'a', volumeMounts: 'x' }]));
  const spec: Record<string, unknown> = { containers };
  if (rng.chance(0.2)) spec.initContainers = [{ name: rng.pick(['istio-proxy', 'migrate']), image: 'x', ...(rng.chance(0.5) ? { restartPolicy: 'Always' } : {}) }];
  if (rng.chance(0.2)) spec.shareProcessNamespace = true;
  if (rng.chance(0.1)) spec.volumes = [{ name: rng.pick(['esi-secrets', 'data', 'esi-tokens']), emptyDir: {} }];
  if (rng.chance(0.05)) spec.serviceAccountName = rng.pick(['app', 'default', '']);
  const metadata: Record<string, unknown> = { namespace: NS, labels: { 'esi.dev/inject': rng.chance(0.97) ? 'true' : 'false' }, annotations };
  if (rng.chance(0.95)) metadata.name = `p-${rng.int(0, 1e6)}`;
  else if (rng.chance(0.5)) metadata.generateName = 'app-';
  return { metadata, spec } as unknown as V1Pod;
}

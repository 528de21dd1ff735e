// The command line's contract (docs/cli.md, "Exit codes"), as a new user meets it: every
// subcommand's bad flags exit 2 at once with a message naming the flag, before anything
// starts (the kubeconfig's part: contract-kubeconfig.test.ts). Each process must end by
// itself: the test kills it after 60 s and fails, which is how "retries for ever" shows.
import t from 'tap';
import { esi, KC, NO_KUBE } from '../../support/fixtures/cli-contract.js';

const CASES: [string, string[], RegExp][] = [
  ['controller: an unknown flag', ['controller', '--frobnicate'], /Unknown option '--frobnicate'/],
  ['controller: --claim-unclassed maybe', ['controller', ...KC, '--claim-unclassed', 'maybe'], /--claim-unclassed must be true, false or auto, got "maybe"/],
  ['controller: --workers abc', ['controller', ...KC, '--workers', 'abc'], /--workers must be a positive number, got "abc"/],
  ['controller: --port 70000', ['controller', ...KC, '--port', '70000'], /--port must be a port number from 1 to 65535/],
  ['controller: --lease-duration 5parsecs', ['controller', ...KC, '--lease-duration', '5parsecs'], /--lease-duration "5parsecs" must be a Go duration/],
  ['controller: --egress-allow a URL', ['controller', ...KC, '--egress-allow', 'http://vault:8200'], /--egress-allow entry "http:\/\/vault:8200" is a URL/],
  ['controller: --leader-elect yes', ['controller', ...KC, '--leader-elect', 'yes'], /--leader-elect must be true or false, got "yes"/],
  ['webhook: an unknown flag', ['webhook', '--frobnicate'], /Unknown option '--frobnicate'/],
  ['webhook: no --agent-image', ['webhook', ...KC], /--agent-image is required/],
  ['webhook: --port abc', ['webhook', ...KC, '--agent-image', 'esi:x', '--port', 'abc'], /--port must be a port number from 1 to 65535, got "abc"/],
  ['webhook: --agent-pull-policy Sometimes', ['webhook', ...KC, '--agent-image', 'esi:x', '--agent-pull-policy', 'Sometimes'], /--agent-pull-policy must be one of Always, IfNotPresent, Never, got "Sometimes"/],
  ['webhook: --workers abc', ['webhook', ...KC, '--agent-image', 'esi:x', '--workers', 'abc'], /--workers must be a whole number from 1 to 8, got "abc"/],
  ['webhook: --agent-env', ['webhook', ...KC, '--agent-image', 'esi:x', '--agent-env', '1BAD=x'], /--agent-env "1BAD=x"/],
  ['webhook: --agent-run-as-user 0', ['webhook', ...KC, '--agent-image', 'esi:x', '--agent-run-as-user', '0'], /--agent-run-as-user "0"/],
  ['webhook: one TLS file', ['webhook', ...KC, '--agent-image', 'esi:x', '--tls-cert-file', '/x'], /--tls-cert-file and --tls-key-file go together/],
  ['inject: an unknown flag', ['inject', '--frobnicate'], /frobnicate/],
  ['template: an unknown flag', ['template', '--frobnicate'], /frobnicate/],
  ['agent: an unknown argument', ['agent', '--frobnicate'], /unknown argument "--frobnicate"/],
];
/** Environment variables checked as flags are (docs/cli.md). */
const ENV_CASES: [string, string[], Record<string, string>, RegExp][] = [
  ['controller: ESI_LOG_LEVEL verbose', ['controller', ...KC], { ESI_LOG_LEVEL: 'verbose' }, /ESI_LOG_LEVEL "verbose" must be one of fatal, error, warn, info, debug, trace, silent/],
  ['webhook: ESI_LOG_FORMAT xml', ['webhook', ...KC, '--agent-image', 'esi:x'], { ESI_LOG_FORMAT: 'xml' }, /ESI_LOG_FORMAT "xml" must be json or text/],
];

// Three processes at a time: each is a cold `tsx` start, seconds apiece on a busy machine.
const results = new Map<string, { code: number | null; out: string }>();
const queue = [...CASES];
await Promise.all([0, 1, 2].map(async () => {
  for (let c = queue.shift(); c; c = queue.shift()) results.set(c[0], await esi(c[1]));
}));
for (const [what, , message] of CASES) {
  t.test(what, async (t) => {
    const { code, out } = results.get(what)!;
    t.equal(code, 2, `exit 2 (${out.trim().split('\n')[0]})`);
    t.match(out, message, 'the message names the flag');
    t.notMatch(out, /"msg":"(webhook serving|esi controller starting|reconciling)"/, 'nothing started');
  });
}

for (const [what, args, vars, message] of ENV_CASES) {
  t.test(what, async (t) => {
    const { code, out } = await esi(args, { ...NO_KUBE, ...vars });
    t.equal(code, 2);
    t.match(out, message);
  });
}

t.test('usage errors point at the help', async (t) => {
  const { out } = await esi(['webhook', '--port', 'abc']);
  t.match(out, /\(esi webhook --help\)/);
});

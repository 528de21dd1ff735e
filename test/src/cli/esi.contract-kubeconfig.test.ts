// The command line's contract for the kubeconfig (docs/cli.md, "Exit codes"): a missing,
// unreadable or cluster-less kubeconfig is named as such and exits 2, instead of a client for
// http://localhost that `esi webhook` retried for ever. Each process must end by itself: the
// test kills it after 60 s and fails (contract.test.ts holds the flags' part).
import t from 'tap';
import { emptyKc, esi, garbage, KC, NO_KUBE } from '../../support/fixtures/cli-contract.js';

t.test('a missing or unreadable kubeconfig is named and exits 2, never retried', async (t) => {
  for (const cmd of [['controller'], ['webhook', '--agent-image', 'esi:x']]) {
    const none = await esi(cmd);
    t.equal(none.code, 2, `${cmd[0]} without any kubeconfig`);
    t.match(none.out, /no kubeconfig: pass --kubeconfig FILE, set \$KUBECONFIG, or run in a pod/);
    t.notMatch(none.out, /HTTP protocol is not allowed/, "not client-node's localhost fallback");
    const missing = await esi([...cmd, ...KC]);
    t.equal(missing.code, 2);
    t.match(missing.out, /--kubeconfig \/nonexistent\/kubeconfig cannot be read \(ENOENT\)/);
    const env = await esi(cmd, { ...NO_KUBE, KUBECONFIG: '/nonexistent/env-kubeconfig' });
    t.equal(env.code, 2);
    t.match(env.out, /\$KUBECONFIG names \/nonexistent\/env-kubeconfig, which cannot be read/);
    const bad = await esi([...cmd, '--kubeconfig', garbage]);
    t.equal(bad.code, 2, `${cmd[0]}: an unparsable kubeconfig`);
    t.match(bad.out, /--kubeconfig .*garbage\.yaml cannot be read/);
    const empty = await esi([...cmd, '--kubeconfig', emptyKc]);
    t.equal(empty.code, 2, `${cmd[0]}: a kubeconfig with no cluster`);
    t.match(empty.out, /names no current cluster/);
  }
});


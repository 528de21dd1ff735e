// What the command-line contract tests share: an environment with no kubeconfig anywhere,
// two broken kubeconfig files, and one `esi` run that must end by itself (killed after 60 s,
// which fails the test: how "retries for ever" shows).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { esiProcess } from '../helpers/webhook.js';

const home = mkdtempSync(join(tmpdir(), 'esi-cli-'));
export const garbage = join(home, 'garbage.yaml');
writeFileSync(garbage, ': not [ a kubeconfig');
export const emptyKc = join(home, 'empty.yaml');
writeFileSync(emptyKc, 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');
/** No $KUBECONFIG, an empty $HOME, not in a pod. */
export const NO_KUBE = { HOME: home, KUBECONFIG: '', KUBERNETES_SERVICE_HOST: '' };
export const KC = ['--kubeconfig', '/nonexistent/kubeconfig'];

export async function esi(args: string[], env: Record<string, string> = NO_KUBE): Promise<{ code: number | null; out: string }> {
  const p = esiProcess(args, env);
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((r) => p.child.on('exit', (c) => r(c)));
  clearTimeout(timer);
  return { code, out: p.output() };
}

// The agent part of the demo (filled in by the agent issue): runs `esi agent` locally
// with the environment the webhook gave its container.
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';

export async function runAgentStep(opts: { kc: KubeConfig; pod: V1Pod; step: (s: string) => void }): Promise<void> {
  void opts;
}

// What a kubelet would do for the agent container, minus the container: materialise the
// volumes it mounts under a root directory (projected service-account tokens from the
// real TokenRequest API, Secret keys read from the API) and run `esi agent --root` with
// the container's environment. Paths inside the container map to `<root><path>`.
import { CoreV1Api, type KubeConfig, type V1Container, type V1Pod } from '@kubernetes/client-node';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { esiProcess } from './webhook.js';

export function agentContainer(pod: V1Pod, name = 'esi-agent'): V1Container {
  const c = [...(pod.spec!.initContainers ?? []), ...pod.spec!.containers].find((x) => x.name === name);
  if (!c) throw new Error(`pod ${pod.metadata?.name} has no container ${name}`);
  return c;
}

/** Writes every volume the container mounts (except emptyDirs) under `root`. */
export async function materializeVolumes(kc: KubeConfig, pod: V1Pod, container: V1Container, root: string): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const ns = pod.metadata!.namespace!;
  const sa = pod.spec!.serviceAccountName ?? 'default';
  for (const mount of container.volumeMounts ?? []) {
    const vol = pod.spec!.volumes!.find((v) => v.name === mount.name)!;
    const dir = join(root, mount.mountPath);
    await mkdir(dir, { recursive: true });
    for (const source of vol.projected?.sources ?? []) {
      const tok = source.serviceAccountToken;
      if (!tok) continue;
      const res = await core.createNamespacedServiceAccountToken({ name: sa, namespace: ns, body: {
        spec: { audiences: tok.audience ? [tok.audience] : [], expirationSeconds: tok.expirationSeconds ?? 3600 } } });
      await writeFile(join(dir, tok.path), res.status!.token, { mode: 0o440 });
    }
    if (vol.secret) {
      const secret = await core.readNamespacedSecret({ name: vol.secret.secretName!, namespace: ns });
      const items = vol.secret.items ?? Object.keys(secret.data ?? {}).map((key) => ({ key, path: key }));
      for (const item of items) {
        const file = join(dir, item.path);
        await mkdir(dirname(file), { recursive: true });
        await writeFile(file, Buffer.from(secret.data?.[item.key] ?? '', 'base64'), { mode: 0o440 });
      }
    }
  }
}

/** Starts `esi agent --root ROOT` with exactly the env the webhook gave the container. */
export function runAgentProcess(container: V1Container, root: string) {
  const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? '']));
  return esiProcess(['agent', '--root', root], { ...env, ESI_LOG_LEVEL: 'debug' });
}

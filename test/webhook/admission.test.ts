// Admission without a cluster (webhook/admission.ts): a per-pod dynamic credential in the agent
// configuration (test/e2e/webhook/ covers the API path).
import t from 'tap';
import { admit } from '../../webhook/admission.js';
import { ctx, pod } from '../support/fixtures/admission.js';

t.test('esi.dev/dynamic-<name>: a per-pod credential in the agent configuration; refused outside native-sidecar mode', async (t) => {
  const configOf = (ann: Record<string, string>) => {
    const r = admit(pod(ann), ctx());
    if (r.kind !== 'mutated') return r;
    const agent = [...(r.pod.spec!.initContainers ?? []), ...r.pod.spec!.containers].find((c) => c.name === 'esi-agent');
    return JSON.parse(agent!.env!.find((e) => e.name === 'ESI_AGENT_CONFIG')!.value!) as Record<string, unknown>;
  };
  const c = configOf({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/dynamic-tls': 'vault:pki/issue/web?common_name=app.example.test&ttl=24h' }) as { dynamicSecrets?: unknown[]; secrets?: unknown[]; stores?: Record<string, unknown> };
  t.same(c.dynamicSecrets, [
    { name: 'db', store: 'SecretStore/team-a/vault', path: 'database/creds/app' },
    { name: 'tls', store: 'SecretStore/team-a/vault', path: 'pki/issue/web', method: 'POST', parameters: { common_name: 'app.example.test', ttl: '24h' } },
  ], 'a dynamic secret alone is enough to inject; parameters make a POST');
  t.same(c.secrets, []);
  t.ok(c.stores?.['SecretStore/team-a/vault'], 'its store is in the configuration');

  const deny = (ann: Record<string, string>) => {
    const r = admit(pod(ann), ctx());
    return r.kind === 'denied' ? r.message : `not denied: ${r.kind}`;
  };
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/mode': 'init-only' }), /esi\.dev\/dynamic-db: dynamic secrets need esi\.dev\/mode native-sidecar \(an init-only agent exits after rendering/);
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/mode': 'sidecar' }), /two credentials for one pod/);
  t.match(deny({ 'esi.dev/dynamic-db': 'fake:database/creds/app' }), /dynamicSecrets\[0\]\.store: provider fake mints no leases/);
  t.match(deny({ 'esi.dev/dynamic-db': 'nope:database/creds/app' }), /esi\.dev\/dynamic-db: SecretStore "nope" not found in namespace "team-a"/);
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:sys/leases/lookup' }), /esi\.dev\/dynamic-db: the engine path has a "sys" segment/);
  t.match(deny({ 'esi.dev/dynamic-db': 'database/creds/app' }), /must be "<store>:<engine path>"/);
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/secrets': 'db' }), /clashes with ExternalSecret "db"/);
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/template-db': 'x' }), /esi\.dev\/template-db: the file name clashes with the directory of esi\.dev\/dynamic-db/);

  // The lease settings of the pod's credentials: esi.dev/lease-overlap, esi.dev/lease-revoke-on-exit.
  const tuned = configOf({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/lease-overlap': '5m', 'esi.dev/lease-revoke-on-exit': 'false' }) as { dynamicSecrets?: unknown[] };
  t.same(tuned.dynamicSecrets, [{ name: 'db', store: 'SecretStore/team-a/vault', path: 'database/creds/app', overlapSeconds: 300, revokeOnExit: false }],
    'the annotations reach every dynamic entry of the configuration');
  t.same((configOf({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/lease-overlap': '0s' }) as { dynamicSecrets?: { overlapSeconds?: number }[] }).dynamicSecrets?.[0]?.overlapSeconds, 0, '0s: revoke at once');
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/lease-overlap': '25h' }), /esi\.dev\/lease-overlap: .*must be at most 24h/);
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/lease-revoke-on-exit': 'no' }), /esi\.dev\/lease-revoke-on-exit: .*must be "true" or "false"/);
  t.match(deny({ 'esi.dev/secrets': 'db', 'esi.dev/lease-overlap': '5m' }), /esi\.dev\/lease-overlap: applies to esi\.dev\/dynamic-<name> credentials, and the pod has none; remove it/);
});

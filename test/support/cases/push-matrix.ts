// The same PushSecret scenario against every backend, each
// read back directly from the backend by the calling test file: label-selected source
// Secrets (one remote entry per Secret, `{{ .Name }}`) pushed as properties into one JSON
// secret and as whole Secrets, to stores selected by label; an update reaches the store
// within one refresh; idle refreshes write nothing (counted through the controller's
// metrics); IfNotExists keeps an entry already there; deletionPolicy None leaves the
// entries when the PushSecret goes.
import type { Test } from 'tap';
import type { Env, RunningController } from '../fixtures/controller.js';
import { create, until } from '../fixtures/controller.js';
import { createPush, deletePush, getPush, pushReady, putSecret } from '../fixtures/push.js';


export interface Backend {
  /** Test names start with it. */
  label: string;
  /** The store body (kind SecretStore) the calling file created; copied with a label. */
  store: { metadata: { name: string }; spec: object };
  /** A remote entry as a JSON object (its properties), undefined when absent. */
  read(key: string): Promise<Record<string, unknown> | undefined>;
  /** Writes a foreign entry `{user: value}` directly in the backend. */
  seed(key: string, value: string): Promise<void>;
  /** The store needs a property for every push (kubernetes: the data key). */
  wholeNeedsProperty?: boolean;
}

const parse = (v: unknown) => (typeof v === 'string' ? (JSON.parse(v) as unknown) : v);

export async function pushMatrix(t: Test, env: Env, ctl: RunningController, ns: string, b: Backend): Promise<void> {
  const run = `mx${Math.random().toString(36).slice(2, 6)}`;
  const storeLabel = { 'esi.test/matrix': run };
  await create(env, ns, 'secretstores', { ...b.store, kind: 'SecretStore', metadata: { name: `${b.store.metadata.name}-${run}`, labels: storeLabel } });
  const srcLabel = { 'esi.test/publish': run };
  await putSecret(env, ns, `${run}-a`, { user: 'alice', pass: 'pa' }, srcLabel);
  await putSecret(env, ns, `${run}-b`, { user: 'bob', pass: 'pb' }, srcLabel);
  await putSecret(env, ns, `${run}-c`, { user: 'carol', pass: 'pc' }); // not selected
  const whole = b.wholeNeedsProperty ? { remoteKey: `${run}-w-{{ .Name }}`, property: 'all' } : { remoteKey: `${run}-w-{{ .Name }}` };
  const wholeOf = async (name: string) => {
    const v = await b.read(`${run}-w-${name}`);
    return b.wholeNeedsProperty ? (v ? parse(v.all) : undefined) : v;
  };

  await t.test(`${b.label}: label-selected Secrets and stores, properties into one JSON secret, whole Secrets`, async (t) => {
    await createPush(env, ns, run, {
      secretStoreRefs: [{ kind: 'SecretStore', labelSelector: { matchLabels: storeLabel } }],
      selector: { secret: { selector: { matchLabels: srcLabel } } },
      deletionPolicy: 'None',
      data: [
        { match: { secretKey: 'user', remoteRef: { remoteKey: `${run}-p-{{ .Name }}`, property: 'user' } } },
        { match: { secretKey: 'pass', remoteRef: { remoteKey: `${run}-p-{{ .Name }}`, property: 'pass' } } },
        { match: { remoteRef: whole } },
      ],
    });
    await pushReady(env, ns, run, 'True', 'Synced', { ms: 90_000 });
    t.same(await b.read(`${run}-p-${run}-a`), { user: 'alice', pass: 'pa' });
    t.same(await b.read(`${run}-p-${run}-b`), { user: 'bob', pass: 'pb' });
    t.same(await wholeOf(`${run}-a`), { user: 'alice', pass: 'pa' }, 'whole Secret as one JSON value');
    t.equal(await b.read(`${run}-p-${run}-c`), undefined, 'an unselected Secret is not pushed');
  });

  await t.test(`${b.label}: an update reaches the store within one refresh; idle refreshes write nothing`, async (t) => {
    await putSecret(env, ns, `${run}-a`, { user: 'alice', pass: 'pa2' }, srcLabel);
    await until(`${b.label} updated`, async () => (await b.read(`${run}-p-${run}-a`))?.pass === 'pa2', 45_000);
    await until(`${b.label} whole updated`, async () => ((await wholeOf(`${run}-a`)) as { pass?: string } | undefined)?.pass === 'pa2', 45_000);
    const written = () => ctl.counter('esi_controller_push_entries_total', { result: 'written' });
    const equal = () => ctl.counter('esi_controller_push_skipped_equal_total');
    const [w0, e0] = [await written(), await equal()];
    await new Promise((r) => setTimeout(r, 6000)); // three refreshIntervals of 2 s
    await until('idle refreshes compared', async () => (await equal()) >= e0 + 18, 45_000);
    t.equal(await written(), w0, 'no remote write on idle refreshes');
  });

  await t.test(`${b.label}: IfNotExists keeps an entry already there`, async (t) => {
    await b.seed(`${run}-theirs`, 'theirs');
    await createPush(env, ns, `${run}-ifne`, {
      secretStoreRefs: [{ name: `${b.store.metadata.name}-${run}` }], selector: { secret: { name: `${run}-a` } }, updatePolicy: 'IfNotExists',
      data: [{ match: { secretKey: 'user', remoteRef: { remoteKey: `${run}-theirs`, property: 'user' } } }],
    });
    await pushReady(env, ns, `${run}-ifne`, 'True', undefined, { ms: 60_000 });
    t.same(await b.read(`${run}-theirs`), { user: 'theirs' });
  });

  await t.test(`${b.label}: deletionPolicy None leaves the entries when the PushSecret is deleted`, async (t) => {
    await deletePush(env, ns, run);
    await until('PushSecret gone', async () => !(await getPush(env, ns, run)));
    t.same(await b.read(`${run}-p-${run}-b`), { user: 'bob', pass: 'pb' });
    t.same(await wholeOf(`${run}-b`), { user: 'bob', pass: 'pb' });
  });
}

// The grpc provider against ESI's reference plugin (examples/grpc-plugin), in process on
// 127.0.0.1 with certificates generated for this run: the conformance suite over TLS and
// over mTLS (seeded through the plugin's own store, not the provider), what the plugin is
// told about the caller, find/push/delete/exists with a property, and the store
// description. What a user meets when something is wrong is in grpc-failures.test.ts.
// The provider's codec is checked against secrets.proto as protobufjs reads it.
// Run: `npx tap --before= --after= test/src/providers/grpc/index.test.ts`
import * as protoLoader from '@grpc/proto-loader';
import t from 'tap';
import { MemoryStore, type Caller } from '../../../../examples/grpc-plugin/backend.js';
import type { PluginServer } from '../../../../examples/grpc-plugin/server.js';
import {
  describeStore, METHODS, SCHEMAS, secretsProtoPath,
} from '../../../../src/providers/grpc/contract.js';
import { transportReason } from '../../../../src/providers/grpc/errors.js';
import { provider } from '../../../../src/providers/grpc/index.js';
import { decode, encode, type Message } from '../../../../src/providers/grpc/wire.js';
import { runConformance, type ConformanceTarget } from '../../../support/conformance.js';
import {
  CANARY, caOnly, caught, client, closedPort, mtlsCreds, plugin, type Creds,
} from '../../../support/fixtures/grpc.js';

const tlsPlugin = await plugin();
const mtlsPlugin = await plugin({ mtls: true });

const NO_LIST = 'the SecretsServer contract (docs/providers/grpc.md) has no list call';

function target(name: string, server: PluginServer, storeId: string, creds: Creds, extra: Partial<ConformanceTarget>): ConformanceTarget {
  const store = server.store as MemoryStore;
  return {
    name, provider, storeId,
    client: () => client(storeId, `127.0.0.1:${server.port}`, creds),
    unreachableClient: async () => client(storeId, `127.0.0.1:${await closedPort()}`, creds, 1000),
    seed: async (key, value) => void store.set(key, value),
    seedVersions: async (key, first, second) => [store.set(key, first), store.set(key, second)],
    key: (base) => `conformance/${base}`,
    ...extra,
    unsupported: { 'find-name': NO_LIST, 'find-tags': NO_LIST, 'find-path': NO_LIST, ...extra.unsupported },
  };
}

t.test('conformance: reference plugin over TLS (server verified by ca.crt)', (tt) =>
  runConformance(tt, target('grpc (reference plugin, TLS)', tlsPlugin, 'SecretStore/conformance/grpc-tls', caOnly, {
    unsupported: { 'auth-failure': 'with server-verified TLS only the plugin is authenticated; client authentication is mTLS (the mTLS target runs this case)' },
  })));

t.test('conformance: reference plugin over mTLS (client certificate required)', (tt) =>
  runConformance(tt, target('grpc (reference plugin, mTLS)', mtlsPlugin, 'SecretStore/conformance/grpc-mtls', mtlsCreds, {
    badAuthClient: () => client('SecretStore/conformance/grpc-mtls', `127.0.0.1:${mtlsPlugin.port}`, caOnly),
  })));

t.test('mTLS: the plugin sees the client certificate, the store and the namespace', async (tt) => {
  const seen: (Caller | undefined)[] = [];
  const backend = new MemoryStore({ 'app/db': { user: 'app', password: CANARY } });
  const get = backend.get.bind(backend);
  backend.get = async (key, version, caller) => {
    seen.push(caller);
    return get(key, version, caller);
  };
  const server = await plugin({ mtls: true, backend });
  const c = await client('SecretStore/team-a/plugin', `https://127.0.0.1:${server.port}`, mtlsCreds);
  tt.teardown(() => c.close());
  tt.equal(Buffer.from(await c.getSecret({ key: 'app/db', property: 'password' })).toString(), CANARY);
  tt.same(Object.fromEntries(Object.entries(await c.getSecretMap({ key: 'app/db' })).map(([k, v]) => [k, Buffer.from(v).toString()])), { user: 'app', password: CANARY });
  tt.same(seen[0], {
    clientCertificate: 'esi-agent', namespace: 'team-a', store: { kind: 'SecretStore', name: 'plugin', namespace: 'team-a' },
  });
  await c.validate();
  tt.pass('validate(): the plugin answers the gRPC health check SERVING');
});

t.test('find is Unsupported, naming the contract; push/delete/exists with a property', async (tt) => {
  const c = await client('SecretStore/team-a/plugin', `127.0.0.1:${tlsPlugin.port}`, caOnly);
  tt.teardown(() => c.close());
  const err = await caught(c.getAllSecrets({ name: { regexp: '.*' } }));
  tt.equal(err.code, 'Unsupported');
  tt.match(err.message, /SecretsServer contract \(docs\/providers\/grpc\.md: GetSecret, PushSecret, DeleteSecret, SecretExists\) has no list call/);

  const remoteKey = 'props/app';
  await c.pushSecret(Buffer.from('u'), { remoteKey, property: 'user' });
  await c.pushSecret(Buffer.from(CANARY), { remoteKey, property: 'password' });
  tt.equal(Buffer.from(await c.getSecret({ key: remoteKey, property: 'password' })).toString(), CANARY);
  tt.equal(await c.secretExists({ remoteKey, property: 'user' }), true);
  await c.deleteSecret({ remoteKey, property: 'user' });
  tt.equal(await c.secretExists({ remoteKey, property: 'user' }), false);
  tt.equal(await c.secretExists({ remoteKey }), true, 'the other property keeps the secret');
  const store = tlsPlugin.store as MemoryStore;
  tt.same(JSON.parse(Buffer.from(await store.get(remoteKey, '')).toString()), { password: CANARY });
  tt.equal((await caught(c.getSecret({ key: remoteKey, metadataPolicy: 'Fetch' }))).code, 'Unsupported', 'metadataPolicy is passed to the plugin');
});

t.test('store description sent as `store`: names only', async (tt) => {
  tt.same(describeStore('ClusterSecretStore/shared', { url: 'p:1', tlsSecretRef: { name: 'tls', namespace: 'esi-system' } }), {
    apiVersion: 'external-secrets.io/v1', kind: 'ClusterSecretStore', metadata: { name: 'shared' },
    spec: { provider: { grpc: { url: 'p:1', tlsSecretRef: { name: 'tls', namespace: 'esi-system' } } } },
  });
  tt.same(describeStore('SecretStore/ns/s', { url: 'p:1' }).metadata, { name: 's', namespace: 'ns' });
  tt.equal(transportReason('No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1 (2026-01-01T00:00:00.000Z). Resolution note: '), 'connection refused');
});

// ---------------------------------------------------------------- the codec vs secrets.proto

const KIND: Record<string, string> = { TYPE_STRING: 'string', TYPE_BYTES: 'bytes', TYPE_ENUM: 'enum', TYPE_BOOL: 'bool', TYPE_MESSAGE: 'message' };

interface FieldDescriptor { name: string; number: number; type: string; typeName: string }
interface MethodDef { path: string; requestSerialize(v: unknown): Buffer; requestDeserialize(b: Buffer): Record<string, unknown>; responseSerialize(v: unknown): Buffer; responseDeserialize(b: Buffer): Record<string, unknown> }

t.test('the codec matches secrets.proto (as protobufjs reads it) field by field and on the wire', async (tt) => {
  const def = protoLoader.loadSync(secretsProtoPath(), { keepCase: true, longs: String, enums: Number, defaults: true, bytes: Buffer });
  tt.same(Object.keys(def).sort(), [
    'ConverstionStrategy', 'DecodingStrategy', 'DeleteSecretReply', 'DeleteSecretRequest', 'GetSecretReply', 'GetSecretRequest',
    'PushRemoteRef', 'PushSecretReply', 'PushSecretRequest', 'RemoteRef', 'SecretExistsReply', 'SecretExistsRequest', 'SecretsServer',
  ], 'no package: every name is top-level, as in the seed');
  const enumValues = (n: string) => ((def[n] as { type: { value: { name: string; number: number }[] } }).type.value).map((x) => [x.name, x.number]);
  tt.same(enumValues('ConverstionStrategy'), [['DEFAULT', 0], ['UNICODE', 1]]);
  tt.same(enumValues('DecodingStrategy'), [['AUTO', 0], ['BASE64', 1], ['BASE64URL', 2], ['NONE', 3]]);

  for (const schema of SCHEMAS) {
    const fields = (def[schema.name] as { type: { field: FieldDescriptor[] } }).type.field;
    tt.same(
      fields.map((f) => [f.number, f.name, KIND[f.type], f.type === 'TYPE_MESSAGE' ? f.typeName : undefined]),
      schema.fields.map((f) => [f.no, f.name, f.kind, f.message?.name]),
      `${schema.name}: same fields, numbers and types`,
    );
  }

  const service = def.SecretsServer as unknown as Record<string, MethodDef>;
  for (const [name, path] of Object.entries(METHODS)) tt.equal(service[name]!.path, path, `${name} is ${path}`);

  const bin = Uint8Array.from([0, 1, 2, 0xfe, 0xff]);
  const request: Message = {
    store: new TextEncoder().encode('{"kind":"SecretStore"}'), namespace: 'ns-ü',
    remoteRef: { key: 'a/b', metadataPolicy: 'None', property: '', version: '7', conversionStrategy: 1, decodingStrategy: 3 },
  };
  const theirs = service.GetSecret!.requestDeserialize(Buffer.from(encode(SCHEMAS.find((s) => s.name === 'GetSecretRequest')!, request)));
  tt.same(theirs, {
    store: Buffer.from('{"kind":"SecretStore"}'), namespace: 'ns-ü', objects: Buffer.alloc(0),
    remoteRef: { key: 'a/b', metadataPolicy: 'None', property: '', version: '7', conversionStrategy: 1, decodingStrategy: 3 },
  }, 'protobufjs decodes what the provider encodes');
  const push = service.PushSecret!.requestDeserialize(Buffer.from(encode(SCHEMAS.find((s) => s.name === 'PushSecretRequest')!, {
    store: new Uint8Array(), namespace: 'n', secret: bin, remoteRef: { remoteKey: 'k', property: 'p' },
  })));
  tt.same(push.secret, Buffer.from(bin));
  tt.same(push.remoteRef, { remoteKey: 'k', property: 'p' });

  const reply = (name: string, m: string, v: unknown) => decode(SCHEMAS.find((s) => s.name === name)!, service[m]!.responseSerialize(v));
  tt.same(reply('GetSecretReply', 'GetSecret', { secret: Buffer.from(bin), error: '' }), { secret: bin, error: '' });
  tt.same(reply('GetSecretReply', 'GetSecret', { error: 'NotFound: x' }), { secret: new Uint8Array(), error: 'NotFound: x' });
  tt.same(reply('SecretExistsReply', 'SecretExists', { exists: true }), { exists: true, error: '' });
  tt.same(reply('PushSecretReply', 'PushSecret', {}), { error: '' });
  tt.same(reply('DeleteSecretReply', 'DeleteSecret', { error: 'Forbidden: no' }), { error: 'Forbidden: no' });

  // Unknown fields (a newer plugin) are skipped: field 9 varint, field 10 bytes, field 11 fixed64, field 12 fixed32.
  const extended = Uint8Array.from([
    0x48, 0x96, 0x01, 0x52, 0x02, 0x68, 0x69, 0x59, 1, 2, 3, 4, 5, 6, 7, 8, 0x65, 1, 2, 3, 4,
    ...service.SecretExists!.responseSerialize({ exists: true, error: 'x' }),
  ]);
  tt.same(decode(SCHEMAS.find((s) => s.name === 'SecretExistsReply')!, extended), { exists: true, error: 'x' });
  tt.throws(() => decode(SCHEMAS.find((s) => s.name === 'GetSecretReply')!, Uint8Array.from([0x0a, 0x05, 1])), /truncated/);
  tt.throws(() => encode(SCHEMAS[0]!, { nope: 'x' }), /has no field "nope"/);
});

// The scenario table of the ESO-semantics harness (./eso-semantics.test.ts): one fake store,
// and for each scenario an ExternalSecret spec with what ESO's documentation says a user gets
// — the Secret's data (and type, labels) or the Ready condition. Each `rule` states, in our own
// words, the documented behaviour the expectation comes from (ESO's guides: "Find many secrets
// / Extract from structured data", "Rewriting Keys in DataFrom", "Decoding Strategy",
// "Advanced Templating v2", "Secret Ownership and Deletion"; property paths are gjson's
// documented syntax). Expected values are written by hand from those rules, never copied from
// ESI's output. The table covers every class of difference found against ESO.

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
// Go's URLEncoding, which ESO decodes with, is the padded alphabet.
const b64url = (b: Buffer) => b.toString('base64').replaceAll('+', '-').replaceAll('/', '_');
const PEM_KEY = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n';

/** Remote bytes with both URL-unsafe base64 characters ('+' '/' → '-' '_' in base64url). */
export const URL_BYTES = Buffer.from([0xfb, 0xff, 0xbf, 0x41]);

export const STORE_DATA: { key: string; value: string }[] = [
  { key: 'db', value: '{"user":"admin","password":"p@ss","port":5432,"nested":{"host":"db.local","tags":["a","b"]}}' },
  { key: 'people', value: '{"users":[{"name":"ann","age":30},{"name":"bob","age":40}],"a.b":"escaped","a":{"b":"nested"}}' },
  { key: 'nums', value: '{"id": 12345678901234567890, "price": 1.50, "exp": 1e3}' },
  { key: 'b64', value: b64('hello') },
  { key: 'b64url', value: b64url(URL_BYTES) },
  { key: 'plain', value: 'not base64!' },
  { key: 'pem', value: PEM_KEY },
  { key: 'app/one', value: '1' },
  { key: 'app/two', value: '2' },
  { key: 'other/three', value: '3' },
  { key: 'json/x', value: '{"k1":"v1","k2":"v2"}' },
  { key: 'json/y', value: '{"k3":"v3"}' },
];

/** A second store: ESO's fake store with its validation test hook set to Error (2). */
export const INVALID_STORE = { name: 'fake-invalid', data: [{ key: 'db', value: '{}' }], validationResult: 2 };

export interface Scenario {
  name: string;
  /** The SecretStore (default `fake`, over STORE_DATA). */
  store?: string;
  rule: string;
  spec: Record<string, unknown>;
  /** The Secret's data, decoded to UTF-8 (absent: no Secret expected). */
  data?: Record<string, string>;
  /** Raw bytes of one key, when they are not UTF-8. */
  bytes?: Record<string, Buffer>;
  type?: string;
  labels?: Record<string, string>;
  ready: { status: 'True' | 'False'; reason?: string; message?: RegExp };
  /** No Secret may exist for this ExternalSecret. */
  noSecret?: boolean;
}

const ref = (secretKey: string, key: string, extra: object = {}) => ({ secretKey, remoteRef: { key, ...extra } });
const SYNCED = { status: 'True' as const, reason: 'SecretSynced' };

export const SCENARIOS: Scenario[] = [
  // remoteRef.property: gjson paths.
  { name: 'prop-simple', rule: 'property selects a key of a JSON value', spec: { data: [ref('u', 'db', { property: 'user' })] }, data: { u: 'admin' }, ready: SYNCED },
  { name: 'prop-nested', rule: 'a dotted property is a nested path', spec: { data: [ref('h', 'db', { property: 'nested.host' })] }, data: { h: 'db.local' }, ready: SYNCED },
  { name: 'prop-number', rule: 'a number is written as its JSON text', spec: { data: [ref('p', 'db', { property: 'port' })] }, data: { p: '5432' }, ready: SYNCED },
  { name: 'prop-object', rule: 'an object property is its JSON text', spec: { data: [ref('n', 'db', { property: 'nested.tags' })] }, data: { n: '["a","b"]' }, ready: SYNCED },
  { name: 'prop-count', rule: 'gjson: `#` is the length of an array', spec: { data: [ref('c', 'db', { property: 'nested.tags.#' })] }, data: { c: '2' }, ready: SYNCED },
  { name: 'prop-index', rule: 'gjson: a number selects an array element', spec: { data: [ref('n', 'people', { property: 'users.1.name' })] }, data: { n: 'bob' }, ready: SYNCED },
  { name: 'prop-query', rule: 'gjson: `#(cond)` is the first element matching a query', spec: { data: [ref('n', 'people', { property: 'users.#(age>35).name' })] }, data: { n: 'bob' }, ready: SYNCED },
  { name: 'prop-all', rule: 'gjson: `#.field` collects a field of every element', spec: { data: [ref('n', 'people', { property: 'users.#.name' })] }, data: { n: '["ann","bob"]' }, ready: SYNCED },
  { name: 'prop-escaped', rule: 'gjson: `\\.` is a dot inside a key', spec: { data: [ref('e', 'people', { property: 'a\\.b' })] }, data: { e: 'escaped' }, ready: SYNCED },
  // ESO run beside ESI on the same objects writes gjson's string form of a selected number:
  // a plain integer as written (beyond 2^53 too), any other number as its shortest float64
  // digits without exponent.
  { name: 'prop-bignum', rule: 'a selected number is gjson\'s string of it: integers as written (beyond 2^53), others normalised (1.50 → 1.5, 1e3 → 1000)', spec: { data: [ref('id', 'nums', { property: 'id' }), ref('price', 'nums', { property: 'price' }), ref('exp', 'nums', { property: 'exp' })] }, data: { id: '12345678901234567890', price: '1.5', exp: '1000' }, ready: SYNCED },
  { name: 'prop-missing', rule: 'a property that is not there is an error', spec: { data: [ref('x', 'db', { property: 'nope' })] }, ready: { status: 'False' }, noSecret: true },
  { name: 'whole-value', rule: 'without property the whole value is the key\'s value', spec: { data: [ref('all', 'plain')] }, data: { all: 'not base64!' }, ready: SYNCED },

  // decodingStrategy.
  { name: 'decode-base64', rule: 'Base64 decodes the value', spec: { data: [ref('v', 'b64', { decodingStrategy: 'Base64' })] }, data: { v: 'hello' }, ready: SYNCED },
  { name: 'decode-base64url', rule: 'Base64URL decodes URL-safe base64', spec: { data: [ref('v', 'b64url', { decodingStrategy: 'Base64URL' })] }, bytes: { v: URL_BYTES }, ready: SYNCED },
  { name: 'decode-auto-b64', rule: 'Auto decodes what is base64', spec: { data: [ref('v', 'b64', { decodingStrategy: 'Auto' })] }, data: { v: 'hello' }, ready: SYNCED },
  { name: 'decode-auto-plain', rule: 'Auto keeps a value that is not base64 as it is', spec: { data: [ref('v', 'plain', { decodingStrategy: 'Auto' })] }, data: { v: 'not base64!' }, ready: SYNCED },
  { name: 'decode-base64-bad', rule: 'Base64 on a value that is not base64 is an error', spec: { data: [ref('v', 'plain', { decodingStrategy: 'Base64' })] }, ready: { status: 'False' }, noSecret: true },

  // dataFrom.extract and find, key conversion, rewrite.
  { name: 'extract', rule: 'extract makes one key per top-level key; nested values are their JSON text', spec: { dataFrom: [{ extract: { key: 'db' } }] }, data: { user: 'admin', password: 'p@ss', port: '5432', nested: '{"host":"db.local","tags":["a","b"]}' }, ready: SYNCED },
  { name: 'extract-property', rule: 'extract with property starts from that path', spec: { dataFrom: [{ extract: { key: 'db', property: 'nested' } }] }, data: { host: 'db.local', tags: '["a","b"]' }, ready: SYNCED },
  { name: 'find-name', rule: 'find by name regexp; a key invalid in a Secret has its bad characters replaced by `_` (conversionStrategy Default)', spec: { dataFrom: [{ find: { name: { regexp: '^app/' } } }] }, data: { app_one: '1', app_two: '2' }, ready: SYNCED },
  { name: 'find-rewrite', rule: 'for the fake store the key is converted before rewrite sees it', spec: { dataFrom: [{ find: { name: { regexp: '^app/' } }, rewrite: [{ regexp: { source: 'app_(.*)', target: 'x-$1' } }] }] }, data: { 'x-one': '1', 'x-two': '2' }, ready: SYNCED },
  { name: 'rewrite-stacked', rule: 'rewrites are applied in order, each on the previous output; no match keeps the key', spec: { dataFrom: [{ extract: { key: 'db' }, rewrite: [{ regexp: { source: '^p', target: 'P' } }, { regexp: { source: '^P(.*)$', target: 'db_$1' } }] }] }, data: { user: 'admin', db_assword: 'p@ss', db_ort: '5432', nested: '{"host":"db.local","tags":["a","b"]}' }, ready: SYNCED },
  { name: 'rewrite-transform', rule: 'a transform rewrite is a Go template over `.value`', spec: { dataFrom: [{ extract: { key: 'db', property: 'nested' }, rewrite: [{ transform: { template: '{{ .value | upper }}' } }] }] }, data: { HOST: 'db.local', TAGS: '["a","b"]' }, ready: SYNCED },
  { name: 'rewrite-bad-regexp', rule: 'a source that does not compile is an error', spec: { dataFrom: [{ extract: { key: 'db' }, rewrite: [{ regexp: { source: '(', target: 'x' } }] }] }, ready: { status: 'False' }, noSecret: true },
  { name: 'rewrite-merge-priority-missing', rule: 'a merge priority key that was not fetched fails the sync (priorityPolicy Strict, the default), whatever conflictPolicy says', spec: { dataFrom: [{ find: { name: { regexp: '^json/' } }, rewrite: [{ merge: { conflictPolicy: 'Ignore', priority: ['_dup'] } }] }] }, ready: { status: 'False', message: /priority key "_dup"/ }, noSecret: true },
  { name: 'rewrite-merge', rule: 'merge Extract hoists the keys of every JSON value to the top level', spec: { dataFrom: [{ find: { name: { regexp: '^json/' } }, rewrite: [{ merge: { strategy: 'Extract' } }] }] }, data: { k1: 'v1', k2: 'v2', k3: 'v3' }, ready: SYNCED },
  { name: 'find-none-retain', rule: 'a find that matches nothing writes no Secret and is not a failure', spec: { dataFrom: [{ find: { name: { regexp: '^nothing-here/' } } }] }, ready: SYNCED, noSecret: true },

  // Merge order.
  { name: 'order-data-wins', rule: 'dataFrom entries apply in order, then data: a later key wins', spec: { dataFrom: [{ extract: { key: 'db', property: 'nested' } }], data: [ref('host', 'plain')] }, data: { host: 'not base64!', tags: '["a","b"]' }, ready: SYNCED },
  { name: 'order-later-datafrom', rule: 'a later dataFrom entry overrides an earlier one', spec: { dataFrom: [{ extract: { key: 'json/x' } }, { extract: { key: 'people', property: 'a' } }, { extract: { key: 'db', property: 'nested' } }] }, data: { k1: 'v1', k2: 'v2', b: 'nested', host: 'db.local', tags: '["a","b"]' }, ready: SYNCED },

  // Templates (engine v2).
  { name: 'tpl-replace', rule: 'template data replaces the fetched keys (mergePolicy Replace, the default)', spec: { data: [ref('user', 'db', { property: 'user' }), ref('password', 'db', { property: 'password' })], target: { template: { engineVersion: 'v2', data: { dsn: '{{ .user }}:{{ .password }}@db' } } } }, data: { dsn: 'admin:p@ss@db' }, ready: SYNCED },
  { name: 'tpl-merge', rule: 'mergePolicy Merge keeps the fetched keys beside the templated ones', spec: { data: [ref('user', 'db', { property: 'user' })], target: { template: { engineVersion: 'v2', mergePolicy: 'Merge', data: { greeting: 'hi {{ .user | upper }}' } } } }, data: { user: 'admin', greeting: 'hi ADMIN' }, ready: SYNCED },
  { name: 'tpl-type-labels', rule: 'template.type and template.metadata set the Secret\'s type and labels', spec: { data: [ref('username', 'db', { property: 'user' }), ref('password', 'db', { property: 'password' })], target: { template: { engineVersion: 'v2', type: 'kubernetes.io/basic-auth', mergePolicy: 'Merge', metadata: { labels: { app: 'billing' } } } } }, data: { username: 'admin', password: 'p@ss' }, type: 'kubernetes.io/basic-auth', labels: { app: 'billing' }, ready: SYNCED },
  { name: 'tpl-missing-key', rule: 'a template naming a key that is not there is an error, not an empty string', spec: { data: [ref('user', 'db', { property: 'user' })], target: { template: { engineVersion: 'v2', data: { x: '{{ .nope }}' } } } }, ready: { status: 'False' }, noSecret: true },
  { name: 'tpl-sprig', rule: 'Sprig functions: b64enc, replace, index for a dashed key', spec: { data: [ref('my-key', 'plain')], target: { template: { engineVersion: 'v2', data: { a: '{{ index . "my-key" | b64enc }}', b: '{{ index . "my-key" | replace " " "_" }}' } } } }, data: { a: b64('not base64!'), b: 'not_base64!' }, ready: SYNCED },
  { name: 'tpl-fromjson', rule: 'fromJson reads a fetched JSON value', spec: { data: [ref('db', 'db')], target: { template: { engineVersion: 'v2', data: { host: '{{ (.db | fromJson).nested.host }}' } } } }, data: { host: 'db.local' }, ready: SYNCED },
  { name: 'tpl-filterpem', rule: 'filterPEM: a type the input does not hold is empty; the type matches case-insensitively; text that is not PEM at all is an error', spec: { data: [ref('v', 'pem')], target: { template: { engineVersion: 'v2', data: { none: '[{{ .v | filterPEM "CERTIFICATE" }}]', key: '{{ .v | filterPEM "private key" }}' } } } }, data: { none: '[]', key: PEM_KEY }, ready: SYNCED },
  { name: 'tpl-filterpem-junk', rule: 'filterPEM of text with no PEM block at all is an error', spec: { data: [ref('v', 'plain')], target: { template: { engineVersion: 'v2', data: { k: '{{ .v | filterPEM "CERTIFICATE" }}' } } } }, ready: { status: 'False', reason: 'TemplateError' }, noSecret: true },

  // Creation policies.
  { name: 'creation-none', rule: 'creationPolicy None fetches and writes no Secret', spec: { data: [ref('u', 'db', { property: 'user' })], target: { creationPolicy: 'None' } }, ready: { status: 'True' }, noSecret: true },
  { name: 'creation-merge-missing', rule: 'creationPolicy Merge without the Secret writes nothing and is not a failure', spec: { data: [ref('u', 'db', { property: 'user' })], target: { creationPolicy: 'Merge' } }, ready: { status: 'True', reason: 'SecretMissing' }, noSecret: true },

  // Store validation.
  { name: 'store-not-valid', rule: 'a store that fails validation (fake validationResult 2) fails its ExternalSecrets, naming the store', store: INVALID_STORE.name, spec: { data: [ref('x', 'db')] }, ready: { status: 'False', message: /fake-invalid.*not ready/ }, noSecret: true },
];

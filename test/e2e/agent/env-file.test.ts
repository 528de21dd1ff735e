// The env file the agent writes for esi.dev/env (injector/env-file.ts): the exact bytes,
// the values the format cannot carry (refused naming the key, never quoting the value), and
// the property that matters: the kubelet's own parser (ParseEnv of the pinned Kubernetes
// version, compiled from the module source build-binaries.sh downloads) reads back every
// value unchanged.
import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentEnv } from '../../../src/agent-config/types.js';
import type { SecretMap } from '../../../src/providers/types.js';
import { EnvFileError, envValueProblem, formatEnvFile, MAX_ENV_VALUE_BYTES } from '../../../injector/env-file.js';
import { cacheDir, versions } from '../../support/platform/binaries.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const env = (vars: AgentEnv['vars']): AgentEnv => ({ dir: '/var/run/esi/env', file: 'esi.env', vars });
const scopes = (data: Record<string, Record<string, Uint8Array>>) => new Map<string, SecretMap>(Object.entries(data));

const VALUES: Record<string, string> = {
  PLAIN: 'hunter2',
  SPACES: '  leading and trailing  ',
  MULTI: '-----BEGIN KEY-----\nabc\n\n  indented\n-----END KEY-----\n',
  SHELL: '$HOME `id` $(id) "double" \\n \\ # not a comment = equals',
  UNICODE: 'pässwörd ✓ 密码',
  TAB: '\tx\t',
  HASH: '#starts with a hash',
  CR_ALONE: 'a\rb',
  BIG: 'x'.repeat(MAX_ENV_VALUE_BYTES),
};

t.test('one NAME=\'value\' entry per variable, in order, values taken literally', async (t) => {
  const out = dec(formatEnvFile(env([
    { name: 'DB_USER', secret: 'db', key: 'username' },
    { name: 'DB_PASSWORD', secret: 'db', key: 'password' },
  ]), scopes({ db: { username: enc('orders'), password: enc('a b\nc') } })));
  t.equal(out, "DB_USER='orders'\nDB_PASSWORD='a b\nc'\n");
});

t.test('values the format cannot carry are refused, naming the variable and key, never the value', async (t) => {
  const cases: [string, string | Uint8Array, RegExp][] = [
    ['quote', "it's-secret", /single quote/],
    ['crlf', 'line1\r\nline2-secret', /carriage return/],
    ['nul', 'a\0b-secret', /NUL/],
    ['empty', '', /empty/],
    ['binary', new Uint8Array([0xff, 0xfe, 0x73]), /not UTF-8/],
    ['big', 'y'.repeat(MAX_ENV_VALUE_BYTES + 1), /at most 32768/],
  ];
  for (const [label, value, why] of cases) {
    const bytes = typeof value === 'string' ? enc(value) : value;
    t.match(envValueProblem(bytes), why, label);
    const err = t.throws(() => formatEnvFile(env([{ name: 'TOKEN', secret: 'api', key: 'token' }]), scopes({ api: { token: bytes } }))) as Error;
    t.type(err, EnvFileError, label);
    t.match(err.message, /esi\.dev\/env: TOKEN \(key "token" of ExternalSecret "api"\): the value /, `${label}: names the variable and the key`);
    if (typeof value === 'string' && value.includes('secret')) t.notOk(err.message.includes('secret-') || err.message.includes("it's"), `${label}: the value is not in the message`);
  }
  t.throws(() => formatEnvFile(env([{ name: 'X', secret: 'api', key: 'nope' }]), scopes({ api: { token: enc('v') } })), /X \(key "nope" of ExternalSecret "api"\): the ExternalSecret has no such key/);
});

/** Builds a tiny program around the kubelet's ParseEnv, copied at test time from the
 *  pinned Kubernetes module in the Go module cache; undefined when that is not there. */
async function kubeletParser(t: Test): Promise<string | undefined> {
  const src = join(cacheDir(), 'go', 'mod', 'k8s.io', `kubernetes@${versions().kubernetes}`, 'pkg', 'kubelet', 'util', 'env', 'env_util.go');
  if (!existsSync(src)) return undefined;
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const dir = await mkdtemp(join(tmpdir(), 'esi-envparse-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'env'));
  await copyFile(src, join(dir, 'env', 'env_util.go'));
  await writeFile(join(dir, 'go.mod'), 'module envparse\n\ngo 1.24\n');
  // Prints each requested key's value as hex (values hold newlines), or "error: ...".
  await writeFile(join(dir, 'main.go'), `package main

import (
	"encoding/hex"
	"fmt"
	"os"

	"envparse/env"
)

func main() {
	for _, key := range os.Args[2:] {
		v, err := env.ParseEnv(os.Args[1], key)
		if err != nil {
			fmt.Println("error: " + err.Error())
			continue
		}
		fmt.Println(hex.EncodeToString([]byte(v)))
	}
}
`);
  const bin = join(dir, 'envparse');
  execFileSync('go', ['build', '-o', bin, '.'], { cwd: dir, env: { ...process.env, GOFLAGS: '-mod=mod', GOCACHE: join(cacheDir(), 'go', 'build'), GOTOOLCHAIN: 'local' }, stdio: 'pipe' });
  return bin;
}

t.test("the kubelet's own parser reads every value back unchanged", async (t) => {
  const bin = await kubeletParser(t);
  if (!bin) {
    t.comment(`skipped: no Go toolchain or no k8s.io/kubernetes@${versions().kubernetes} in ${cacheDir()}/go/mod (npm run platform:build downloads it)`);
    return;
  }
  const names = Object.keys(VALUES);
  const file = join(await mkdtemp(join(tmpdir(), 'esi-envfile-')), 'esi.env');
  t.teardown(() => rm(join(file, '..'), { recursive: true, force: true }));
  const data = Object.fromEntries(names.map((n) => [n.toLowerCase(), enc(VALUES[n]!)]));
  await writeFile(file, formatEnvFile(env(names.map((n) => ({ name: n, secret: 'es', key: n.toLowerCase() }))), scopes({ es: data })));
  const lines = execFileSync(bin, [file, ...names], { encoding: 'utf8' }).trimEnd().split('\n');
  for (const [i, n] of names.entries()) t.equal(Buffer.from(lines[i]!, 'hex').toString('utf8'), VALUES[n], n);
  // Why the refusals above: what the same parser makes of the values the writer refuses.
  const parse = async (content: string, key: string) => {
    await writeFile(file, content);
    return execFileSync(bin, [file, key], { encoding: 'utf8' }).trimEnd();
  };
  t.match(await parse("Q='it's'\n", 'Q'), /^error: .*unexpected content after closing quote/, 'a single quote ends the value: the file does not parse');
  t.equal(Buffer.from(await parse("CRLF='a\r\nb'\n", 'CRLF'), 'hex').toString('utf8'), 'a\nb', 'a carriage return before a newline is dropped');
  t.equal(await parse("E=''\n", 'E'), '', 'an empty value reads like a missing key (the kubelet then refuses to start a container that needs it)');
});

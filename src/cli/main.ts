// The `esi` command: one executable, one subcommand per role. Each subcommand's module
// is imported only when used, so `esi agent` never loads the webhook's dependencies.
import { readFileSync } from 'node:fs';
import { UsageError } from '../usage.js';
import { packageRoot } from '../package-root.js';

type Main = (argv: string[]) => Promise<number>;

interface Subcommand {
  summary: string;
  load: () => Promise<Main>;
}

const subcommands: Record<string, Subcommand> = {
  webhook: {
    summary: 'serve the mutating admission webhook (HTTPS /mutate, /healthz, /readyz, /metrics)',
    load: async () => (await import('../../webhook/workers.js')).main,
  },
  agent: {
    summary: 'run the secrets agent: fetch, render, atomically write, refresh, notify',
    load: async () => (await import('../../injector/cmd.js')).main,
  },
  controller: {
    summary: 'run the reconciler (ExternalSecret -> Secret, PushSecret)',
    load: async () => (await import('../controller/cmd.js')).main,
  },
  inject: {
    summary: 'offline preview: print the mutated pod for given manifests (-f FILE …)',
    load: async () => (await import('../../webhook/inject-cmd.js')).main,
  },
  template: {
    summary: "offline: render an ExternalSecret's template from given data and print the Secret (-f FILE …)",
    load: async () => (await import('../controller/template-cmd.js')).main,
  },
  migrate: {
    summary: 'read-only pre-flight of a move from ESO: `esi migrate check` (what ESI serves, refuses, and whether the CRDs are safe)',
    load: async () => (await import('../migrate/cmd.js')).main,
  },
  version: { summary: 'print the version', load: async () => versionMain },
};

export function version(): string {
  const pkg = JSON.parse(readFileSync(`${packageRoot()}/package.json`, 'utf8')) as { version: string };
  return pkg.version;
}

async function versionMain(): Promise<number> {
  process.stdout.write(`esi ${version()} (node ${process.versions.node})\n`);
  return 0;
}

export function usage(): string {
  const width = Math.max(...Object.keys(subcommands).map((k) => k.length));
  const lines = Object.entries(subcommands).map(([name, s]) => `  ${name.padEnd(width)}  ${s.summary}`);
  return `esi — the External Secrets Injector

Usage: esi <command> [options]

Commands:
${lines.join('\n')}

Run \`esi <command> --help\` for a command's options.
`;
}

export async function run(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return 0;
  }
  if (name === '--version') return versionMain();
  const sub = subcommands[name];
  if (!sub) {
    process.stderr.write(`esi: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  try {
    return await (await sub.load())(rest);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND') {
      process.stderr.write(`esi ${name}: not available in this build\n`);
      return 1;
    }
    // Usage (docs/cli.md, "Exit codes"): a flag, its value or an input file; said once, exit 2.
    if (err instanceof UsageError || code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`esi ${name}: ${(err as Error).message} (esi ${name} --help)\n`);
      return 2;
    }
    process.stderr.write(`esi ${name}: ${(err as Error).message}\n`);
    return 1;
  }
}

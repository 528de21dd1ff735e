// The machine a benchmark ran on, for the "Machine" subsection of BENCHMARKS.md.
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  ramGiB: number;
  node: string;
  /** The Node.js the agent ran on, when it is not `node` (bench/lib/node.ts: the images'). */
  agentNode?: string;
  os: string;
  kernel: string;
  loadAverage: string;
  date: string;
}

function distro(): string {
  try {
    const line = readFileSync('/etc/os-release', 'utf8').split('\n').find((l) => l.startsWith('PRETTY_NAME='));
    if (line) return line.slice('PRETTY_NAME='.length).replace(/^"|"$/g, '');
  } catch {
    // Not Linux, or no os-release: fall back to os.type().
  }
  return os.type();
}

export function machineInfo(now = new Date()): MachineInfo {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: os.availableParallelism?.() ?? cpus.length,
    ramGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    os: `${distro()} (${os.platform()}/${os.arch()})`,
    kernel: os.release(),
    loadAverage: os.loadavg().map((l) => l.toFixed(2)).join(' / '),
    date: now.toISOString().replace(/\.\d+Z$/, 'Z'),
  };
}

/** The "Machine" subsection body: a bullet list. */
export function machineMarkdown(m: MachineInfo): string {
  return [
    `- CPU: ${m.cpuModel}, ${m.cores} logical cores`,
    `- RAM: ${m.ramGiB} GiB`,
    `- OS: ${m.os}, kernel ${m.kernel}`,
    m.agentNode && m.agentNode !== m.node ? `- Node.js: ${m.node} runs the benchmark; ESI's agent runs on ${m.agentNode}, the images' (test/platform/versions.env)` : `- Node.js: ${m.node}`,
    `- Load average before the run (1/5/15 min): ${m.loadAverage}`,
    `- Date: ${m.date}`,
  ].join('\n');
}

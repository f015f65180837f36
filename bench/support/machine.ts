import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const run = (command: string) =>
  execSync(command, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();

/** What RESULTS.md records about the machine a benchmark ran on. */
export function machineReport(): string {
  const cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '?';
  let commit = '?';
  try {
    commit = run('git rev-parse --short HEAD');
  } catch {
    // not a git checkout (e.g. a `git archive` snapshot)
  }
  return [
    `date: ${new Date().toISOString()}`,
    `node: ${process.version}`,
    `nproc: ${run('nproc')}`,
    `cpu: ${cpu}`,
    `free -g:\n${run('free -g')}`,
    `commit: ${process.env.PARLEY_COMMIT ?? commit}`,
    `uptime: ${load()}`,
  ].join('\n');
}

/** `uptime` (load averages), to judge whether other work competed for the 2 cores. */
export const load = (): string => run('uptime').replace(/^.*?up/, 'up');

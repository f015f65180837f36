import { readdirSync, readFileSync } from 'node:fs';

/** The file the server forks for extractions (src/documents/extraction/run-extraction.ts). */
const EXTRACTION_MARKER = 'extraction-process.ts';

/** Live child processes of `parentPid` running the extraction entry file, by pid. */
export function extractionProcesses(parentPid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) !== parentPid || state === 'Z') continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes(EXTRACTION_MARKER)) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Whether a process exists and has not exited (a zombie has exited). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

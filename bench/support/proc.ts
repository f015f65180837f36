import { readdirSync, readFileSync } from 'node:fs';

/** VmRSS / VmHWM of a process in bytes (0 once it is gone). */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (name: string) =>
      Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
    return { rss: kib('VmRSS') * 1024, hwm: kib('VmHWM') * 1024 };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}

/** Samples VmRSS every `everyMs`, keeping the peak, until stopped. */
export function sampleRss(pid: number, everyMs = 100) {
  let peak = 0;
  let samples = 0;
  const timer = setInterval(() => {
    const { rss } = memoryOf(pid);
    peak = Math.max(peak, rss);
    samples++;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return { peak, samples };
    },
  };
}

/**
 * A /proc `stat` line: the command name (in parentheses, and it may hold spaces or ")") and the
 * fields after it (the first of them, `state`, is field 3 of proc(5)).
 */
function readStat(path: string): { name: string; fields: string[] } {
  const stat = readFileSync(path, 'utf8');
  const close = stat.lastIndexOf(')');
  return {
    name: stat.slice(stat.indexOf('(') + 1, close),
    fields: stat.slice(close + 2).split(' '),
  };
}

/** utime + stime (fields 14 and 15) in ms; CLK_TCK is 100 on Linux. */
const cpuMsOfStat = (fields: readonly string[]) =>
  ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;

/** CPU time (user+system, ms) a process has used so far, from /proc/<pid>/stat. */
export function cpuMsOf(pid: number): number {
  try {
    return cpuMsOfStat(readStat(`/proc/${pid}/stat`).fields);
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU time (user+system, ms) of a process's running threads by thread name, from
 * /proc/<pid>/task/<tid>/stat: `MainThread`, `WorkerThread` (node:worker_threads: the embedded
 * engine's PGlite), `V8Worker` (V8's compiler and GC helpers), `libuv-worker`.
 */
export function cpuMsByThread(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try {
        const { name, fields } = readStat(`/proc/${pid}/task/${task}/stat`);
        byName.set(name, (byName.get(name) ?? 0) + cpuMsOfStat(fields));
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    // the process is gone
  }
  return byName;
}

/** CPU of a process's node:worker_threads (the embedded engine's PGlite runs on one), in ms. */
export const workerThreadsCpuMs = (pid: number): number =>
  cpuMsByThread(pid).get('WorkerThread') ?? 0;

/**
 * Time (ms) the scheduler ran a process's threads so far, from /proc/<pid>/task/<tid>/schedstat:
 * nanoseconds, not the 10 ms ticks of /proc/<pid>/stat, so a round of a few chats is measured
 * without quantisation. Threads that have exited are not counted (a worker's is only while it
 * runs: PGlite's thread runs for the server's life).
 */
export function runMsOf(pid: number): number {
  let total = 0;
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    return Number.NaN;
  }
  return total / 1e6;
}

/**
 * CPU time (ms) of a process and every process below it that is still running: a cluster's
 * primary and its workers (a worker's time reaches its parent's counters only once it exits).
 */
export function cpuMsOfTree(pid: number): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const parent = Number(readStat(`/proc/${entry}/stat`).fields[1]); // ppid (field 4)
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  const pending = [pid];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    total += cpuMsOf(next) || 0;
    pending.push(...(children.get(next) ?? []));
  }
  return total;
}

/**
 * CPU time (ms) of the PostgreSQL backends serving one database, found by their process title
 * (`postgres: … <user> <database> <client> <state>`): what the server engine's own process does
 * not count. Backends that exited between two readings are not counted (a pool keeps its
 * connections while chats run, so within a benchmark round they stay).
 */
export function cpuMsOfPostgres(database: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (title.startsWith('postgres: ') && title.includes(` ${database} `)) {
        total += cpuMsOf(Number(entry)) || 0;
      }
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** The database name of a PostgreSQL URL (its path without the slash). */
export const databaseOf = (url: string): string => new URL(url).pathname.slice(1);

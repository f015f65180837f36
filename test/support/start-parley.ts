import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { spawnParley } from './spawn-parley.ts';

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface RunningParley {
  url: string;
  dataDir: string;
  process: ChildProcess;
  /** Every JSON log line the server printed so far. */
  logs: LogLine[];
  /** Everything printed, raw, for assertions that nothing secret was logged. */
  output(): string;
  fetch(path: string, init?: RequestInit & { token?: string | null }): Promise<Response>;
  /** Sends the signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartOptions {
  env?: Record<string, string | undefined>;
  /** Reuse a data directory (restart tests); a fresh one is made otherwise. */
  dataDir?: string;
  /** Default token sent by `fetch`; null sends none. */
  token?: string | null;
}

/**
 * Starts the real server (as `npm start` runs it) as a child process on a free port, with its
 * own data directory, and waits until it listens. Tests talk HTTP to it like a user would.
 */
export async function startParley(options: StartOptions = {}): Promise<RunningParley> {
  const ownDataDir = !options.dataDir;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'parley-test-'));
  const child = spawnParley({
    PORT: '0',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    ...options.env,
  });

  const logs: LogLine[] = [];
  let raw = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    raw += chunk.toString('utf8');
  });
  if (!child.stdout) throw new Error('spawn gave no stdout');
  const lines = createInterface({ input: child.stdout });
  const listening = new Promise<number>((resolve, reject) => {
    lines.on('line', (line) => {
      raw += `${line}\n`;
      try {
        const entry = JSON.parse(line) as LogLine;
        logs.push(entry);
        if (entry.msg === 'Parley is listening') resolve(entry.port as number);
      } catch {
        // not a log line
      }
    });
    child.once('exit', (code) =>
      reject(new Error(`Parley exited with ${code} before listening:\n${raw}`)),
    );
  });

  const port = await withTimeout(listening, 30_000, () => `Parley did not start:\n${raw}`);
  const url = `http://127.0.0.1:${port}`;
  const defaultToken = options.token === undefined ? options.env?.API_TOKEN : options.token;

  return {
    url,
    dataDir,
    process: child,
    logs,
    output: () => raw,
    fetch(path, init = {}) {
      const { token = defaultToken, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (token && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
      return fetch(`${url}${path}`, { ...rest, headers });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill(signal);
      const code = await withTimeout(exited, 20_000, () => 'Parley did not stop');
      if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message())), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

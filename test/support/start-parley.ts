import type { ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
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
  /**
   * The first log line that matches, waiting for it: lines travel through the child's stdout
   * pipe, so a line logged before a response was sent may still arrive after it.
   */
  waitForLog(matches: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Resolves once nothing new has been printed for `quietMs`: before asserting an absence. */
  settled(quietMs?: number): Promise<void>;
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
  /** How long to wait for "Parley is listening" (default 30 s). */
  startTimeoutMs?: number;
  /**
   * true: an embedded data directory without a database gets one made by this start itself
   * (unpacking the shipped seed), not a copy of the test run's template
   * (test/support/embedded-template.ts).
   */
  freshDataDir?: boolean;
}

/**
 * Starts the real server (as `npm start` runs it) as a child process on a free port, with its
 * own data directory, and waits until it listens. Tests talk HTTP to it like a user would.
 */
export async function startParley(options: StartOptions = {}): Promise<RunningParley> {
  const ownDataDir = !options.dataDir;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'parley-test-'));
  if (!options.env?.DATABASE_URL && !options.freshDataDir && !existsSync(join(dataDir, 'pg'))) {
    const template = await embeddedTemplate();
    if (template) cpSync(template, join(dataDir, 'pg'), { recursive: true });
  }
  const child = spawnParley({
    PORT: '0',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    // The model titles conversations in the background: a request no test scripted. Tests of
    // titles ask for it.
    CONVERSATION_TITLES: 'question',
    ...options.env,
  });

  const logs: LogLine[] = [];
  let raw = '';
  let lastOutputAt = Date.now();
  child.stderr?.on('data', (chunk: Buffer) => {
    raw += chunk.toString('utf8');
    lastOutputAt = Date.now();
  });
  if (!child.stdout) throw new Error('spawn gave no stdout');
  const lines = createInterface({ input: child.stdout });
  const listening = new Promise<number>((resolve, reject) => {
    lines.on('line', (line) => {
      raw += `${line}\n`;
      lastOutputAt = Date.now();
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

  const port = await withTimeout(listening, options.startTimeoutMs ?? 90_000, () => {
    child.kill('SIGKILL'); // not left running behind a failed test
    return `Parley did not start:\n${raw}`;
  });
  const url = `http://127.0.0.1:${port}`;
  const defaultToken = options.token === undefined ? options.env?.API_TOKEN : options.token;

  return {
    url,
    dataDir,
    process: child,
    logs,
    output: () => raw,
    async waitForLog(matches, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = logs.find(matches);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no matching log line in ${timeoutMs} ms`);
        await sleep(25);
      }
    },
    async settled(quietMs = 300) {
      while (Date.now() - lastOutputAt < quietMs)
        await sleep(quietMs - (Date.now() - lastOutputAt));
    },
    fetch(path, init = {}) {
      const { token = defaultToken, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (token && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
      return fetch(`${url}${path}`, { ...rest, headers }).catch((error: unknown) => {
        throw networkFailure(error, `${rest.method ?? 'GET'} ${path}`, child, raw);
      });
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

/**
 * A request that got no answer at all (the connection refused or closed) says what the server
 * was doing: whether it had exited, and its last output. A bare "fetch failed" left a flaky
 * failure unexplained. Aborts and other errors pass unchanged.
 */
function networkFailure(error: unknown, request: string, child: ChildProcess, output: string) {
  if (!(error instanceof TypeError) || error.message !== 'fetch failed') return error;
  const cause = error.cause as NodeJS.ErrnoException | undefined;
  const state =
    child.exitCode !== null || child.signalCode !== null
      ? `Parley had exited (code ${child.exitCode}, signal ${child.signalCode})`
      : 'Parley was still running';
  return new TypeError(
    `fetch failed: ${request}: ${cause?.code} ${cause?.message}; ${state}; ` +
      `its last output:\n${output.slice(-3_000)}`,
    { cause: error },
  );
}

/** The test run's template database; none outside vitest (a benchmark's start). */
async function embeddedTemplate(): Promise<string | undefined> {
  if (!process.env.VITEST) return undefined;
  const { inject } = await import('vitest');
  return inject('embeddedTemplate');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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

import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { spawnParley } from '../../test/support/spawn-parley.ts';
import { sleep } from './stats.ts';

export interface BenchServer {
  url: string;
  pid: number;
  process: ChildProcess;
  dataDir: string;
  /** performance.now() just before spawn, at the "Parley is listening" line, at the first 200 from /health. */
  spawnedAt: number;
  listeningAt: number | undefined;
  healthyAt: number;
  /** The "Parley is listening" log entry (it carries the server's own startupMs). */
  listening: Record<string, unknown> | undefined;
  /** Warnings and errors the server logged (LOG_LEVEL=warn by default). */
  logs: string[];
  /** Stops the server; a data directory made here is removed unless `keep` (to measure it). */
  stop(options?: { keep?: boolean }): Promise<void>;
}

export interface ServerOptions {
  env?: Record<string, string | undefined>;
  dataDir?: string;
  /** Every log line the server prints on stdout (set LOG_LEVEL in `env` to see info lines). */
  onLogLine?: (text: string) => void;
  /** Another checkout of Parley to run (to compare two commits side by side). */
  root?: URL;
  /** A command that runs node, e.g. `valgrind --tool=callgrind` (bench/chat-instructions.ts). */
  wrapper?: readonly string[];
  /** How long to wait for the first 200 from /health (default 60 s; under valgrind minutes). */
  startTimeoutMs?: number;
}

/**
 * Spawns the server as `npm start` runs it, on a free port, and waits for the first 200 from /health (polled
 * every 5 ms from the moment of the spawn). Works at any LOG_LEVEL: the "listening" line is
 * only seen at info.
 */
export async function startServer(options: ServerOptions = {}): Promise<BenchServer> {
  const port = await freePort();
  const ownDataDir = !options.dataDir;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'parley-bench-'));
  const url = `http://127.0.0.1:${port}`;
  const spawnedAt = performance.now();
  const child = spawnParley(
    {
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      LLM_MAX_RETRIES: '0',
      // e.g. BENCH_SERVER_NODE_OPTIONS='--cpu-prof --cpu-prof-dir=/tmp/prof' to profile the server
      NODE_OPTIONS: process.env.BENCH_SERVER_NODE_OPTIONS,
      ...options.env,
    },
    undefined,
    options.root,
    options.wrapper,
  );
  const logs: string[] = [];
  let listeningAt: number | undefined;
  let listening: Record<string, unknown> | undefined;
  child.stderr?.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
  if (child.stdout) {
    createInterface({ input: child.stdout }).on('line', (text) => {
      options.onLogLine?.(text);
      if (listeningAt === undefined && text.includes('"Parley is listening"')) {
        listeningAt = performance.now();
        listening = JSON.parse(text) as Record<string, unknown>;
      } else if (/"level":(40|50|60)/.test(text)) {
        if (logs.length < 1_000) logs.push(text);
      }
    });
  }
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });

  let healthyAt: number | undefined;
  while (healthyAt === undefined) {
    if (exited) throw new Error(`Parley exited before it was healthy:\n${logs.join('\n')}`);
    const timeoutMs = options.startTimeoutMs ?? 60_000;
    if (performance.now() - spawnedAt > timeoutMs) {
      throw new Error(`Parley did not start in ${timeoutMs / 1000} s`);
    }
    try {
      const response = await fetch(`${url}/health`);
      await response.arrayBuffer();
      if (response.status === 200) healthyAt = performance.now();
    } catch {
      // not listening yet
    }
    if (healthyAt === undefined) await sleep(5);
  }

  return {
    url,
    pid: child.pid as number,
    process: child,
    dataDir,
    spawnedAt,
    // Read when asked: the log line may come through the pipe after the first 200.
    get listeningAt() {
      return listeningAt;
    },
    healthyAt,
    get listening() {
      return listening;
    },
    logs,
    async stop({ keep = false } = {}) {
      if (child.exitCode === null && child.signalCode === null) {
        const done = once(child, 'exit');
        child.kill('SIGTERM');
        await done;
      }
      if (ownDataDir && !keep) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  server.close();
  await once(server, 'close');
  return port;
}

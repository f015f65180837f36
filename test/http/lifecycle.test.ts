import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseChatStream, streamReader } from '../support/chat-stream.ts';
import { engineSetup } from '../support/engine-setup.ts';
import { ENGINES, engineEnv } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres-server.ts';
import { spawnParley } from '../support/spawn-parley.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

/** Runs the server (as `npm start` does) to completion and returns its exit code and stderr. */
function runToExit(
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawnParley({ PORT: '0', ...env }, ['ignore', 'ignore', 'pipe']);
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, ms: performance.now() - started });
    });
  });
}

describe('start-up', () => {
  it('refuses a second process on the same data directory, at once and clearly', async () => {
    const first = await startParley();
    try {
      const second = await runToExit({ DATA_DIR: first.dataDir });
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(`is already in use by process ${first.process.pid}`);
      expect(second.stderr).toContain('set DATA_DIR to another directory');
      expect(second.ms).toBeLessThan(10_000);
      // The first one is unharmed.
      expect((await first.fetch('/health')).status).toBe(200);
    } finally {
      await first.stop();
    }
  });

  // The data directory's lock is a socket that answers who holds it; anyone on the machine may
  // ask (a second Parley refused at start-up does). One that asked and left before the answer
  // made the holder's write fail (EPIPE) on a socket with no 'error' listener: the holder ended.
  it('keeps running when a process that asks who holds the data directory leaves first', async () => {
    const first = await startParley();
    const pid = first.process.pid as number;
    try {
      const hash = createHash('sha256').update(realpathSync(first.dataDir)).digest('hex');
      // Held, so it reads the question only after the asker has gone (as a slow holder would).
      process.kill(pid, 'SIGSTOP');
      try {
        const asker = connect(`\0parley-data-${hash.slice(0, 32)}`);
        asker.on('error', () => {});
        await new Promise((resolve) => asker.once('connect', resolve));
        asker.destroy();
        await new Promise((resolve) => asker.once('close', resolve));
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      await sleep(500);
      expect(first.process.exitCode, first.output().slice(-1_500)).toBeNull();
      expect((await first.fetch('/health')).status).toBe(200);
    } finally {
      await first.stop();
    }
  });

  it('takes over a data directory whose previous owner was killed', async () => {
    const first = await startParley();
    const dataDir = first.dataDir;
    first.process.kill('SIGKILL');
    await new Promise((resolve) => first.process.once('exit', resolve));
    const second = await startParley({ dataDir });
    try {
      expect((await second.fetch('/health')).status).toBe(200);
    } finally {
      await second.stop();
    }
  });

  it.each([
    [
      { GRAPH_ENABLED: 'maybe' },
      'GRAPH_ENABLED: accepts true, false, 1, 0, yes or no (got "maybe")',
    ],
    [{ PORT: 'eighty' }, 'PORT: accepts a whole number from 0 to 65535 (got "eighty")'],
    [{ DATABASE_URL: 'mysql://db/x' }, 'DATABASE_URL: accepts a postgres:// or postgresql:// URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL: accepts fatal, error, warn, info, debug, trace or silent'],
  ])('stops with a message naming a bad setting: %j', async (env, message) => {
    const result = await runToExit(env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Invalid configuration');
    expect(result.stderr).toContain(message);
  });

  it('never echoes a secret setting in a configuration error', async () => {
    const result = await runToExit({ DATABASE_URL: 'mysql://user:hunter2@db/x' });
    expect(result.code).toBe(1);
    expect(result.stderr).not.toContain('hunter2');
  });

  it('starts with booleans written as words', async () => {
    const parley = await startParley({ env: { GRAPH_ENABLED: 'Yes', CRAG_ENABLED: '0' } });
    try {
      expect((await parley.fetch('/health')).status).toBe(200);
    } finally {
      await parley.stop();
    }
  });
});

describe.each(ENGINES)('shutdown on the %s engine', (engine) => {
  it('exits cleanly on SIGTERM and SIGINT', { timeout: 90_000 }, async () => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const storage = await engineEnv(engine);
      try {
        const parley = await startParley({ env: storage.env });
        expect(await parley.stop(signal)).toBe(0);
        expect(parley.logs.map((line) => line.msg)).toContain('stopped');
      } finally {
        await storage.cleanup();
      }
    }
  });
});

/**
 * Streams open at SIGTERM (plain ones, not resumable), on each engine: the pool closes and the
 * engine stops after them, so an answer cut at the end of the grace period is still stored.
 */
describe.each(ENGINES)('shutdown with open streams on the %s engine', (engine) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
  const startChat = (parley: RunningParley) =>
    parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'tell me a story', user_id: 'shutdown' }),
    });
  const turnsOf = async (parley: RunningParley) =>
    (
      (await (await parley.fetch('/users/shutdown/history')).json()) as {
        turns: { answer: string; status: string; interrupted: boolean }[];
      }
    ).turns;

  it('lets an open stream finish within the grace period, then exits 0', async () => {
    const { llm, dataDir, env, cleanup } = await engineSetup(engine, {
      SHUTDOWN_GRACE_MS: '10000',
    });
    cleanups.push(cleanup);
    const parley = await startParley({ dataDir, env });
    try {
      llm.enqueue(reply.text(words(20), { chunks: 20, delayMs: 50 }));
      const reader = streamReader(await startChat(parley));
      await reader.until((raw) => raw.includes('w2'));
      const stopped = parley.stop('SIGTERM');
      const stream = parseChatStream(await reader.rest());
      expect(stream.text).toBe(words(20));
      expect(stream.error).toBeUndefined();
      expect(stream.ended).toBe(true);
      expect(await stopped).toBe(0);
      // A database that answers is closed, not cut.
      expect(parley.logs.filter((line) => line.code === 'database_close_timed_out')).toEqual([]);
    } finally {
      await parley.stop();
    }
    const again = await startParley({ dataDir, env });
    try {
      expect(await turnsOf(again)).toEqual([
        expect.objectContaining({ answer: words(20), status: 'completed' }),
      ]);
    } finally {
      await again.stop();
    }
  });

  it('stops a stream that outlives the grace period, ending it cleanly, and keeps it', async () => {
    const { llm, dataDir, env, cleanup } = await engineSetup(engine, { SHUTDOWN_GRACE_MS: '300' });
    cleanups.push(cleanup);
    const parley = await startParley({ dataDir, env });
    let shown = '';
    try {
      llm.enqueue(reply.text(words(200), { chunks: 200, delayMs: 50 }));
      const reader = streamReader(await startChat(parley));
      await reader.until((raw) => raw.includes('w1'));
      const started = Date.now();
      const stopped = parley.stop('SIGTERM');
      const stream = parseChatStream(await reader.rest());
      expect(stream.error).toEqual({
        code: 'shutting_down',
        message: 'The service is restarting; send the message again in a moment.',
      });
      expect(stream.ended).toBe(true);
      expect(stream.text.length).toBeLessThan(words(200).length);
      expect(await stopped).toBe(0);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(
        parley.logs.some((line) => line.msg === 'chat stopped by shutdown; answer interrupted'),
      ).toBe(true);
      shown = stream.text;
    } finally {
      await parley.stop();
    }
    // What the client was shown is in the history after the restart, marked interrupted.
    const again = await startParley({ dataDir, env });
    try {
      expect(await turnsOf(again)).toEqual([
        expect.objectContaining({ answer: shown, status: 'interrupted', interrupted: true }),
      ]);
    } finally {
      await again.stop();
    }
  });
});

/** Parley on a new PostgreSQL database reached through a proxy the test can cut or silence. */
function behindProxy(env: Record<string, string> = {}) {
  const stack: { database?: TestDatabase; proxy?: TcpProxy; parley?: RunningParley } = {};
  beforeAll(async () => {
    stack.database = await createTestDatabase();
    const url = new URL(stack.database.url);
    stack.proxy = await startTcpProxy(url.hostname, Number(url.port || 5432));
    url.host = `127.0.0.1:${stack.proxy.port}`;
    stack.parley = await startParley({ env: { DATABASE_URL: url.toString(), ...env } });
  });
  afterAll(async () => {
    await stack.parley?.stop();
    await stack.proxy?.close();
    await stack.database?.drop();
  });
  return stack as Required<typeof stack>;
}

describe('a PostgreSQL server that goes away and comes back', () => {
  const stack = behindProxy();

  it('turns health to 503, answers requests with a clean 503, and recovers', async () => {
    expect((await stack.parley.fetch('/documents')).status).toBe(200);

    await stack.proxy.cut();
    const health = await stack.parley.fetch('/health');
    expect(health.status).toBe(503);
    const { model, ...spec } = (await health.json()) as Record<string, unknown>;
    expect(spec).toEqual({ status: 'unavailable', version: '1.0', database: 'unreachable' });
    // No model is named: the embedded one is looked for at NO_MODEL_URL, where nothing listens.
    expect(model).toMatchObject({
      source: 'download',
      state: expect.stringMatching(/^(checking|failed)$/),
    });
    const documents = await stack.parley.fetch('/documents');
    expect(documents.status).toBe(503);
    expect(await documents.json()).toEqual({
      detail: 'The database is unavailable; try again shortly.',
    });
    const unavailable = { detail: 'The database is unavailable; try again shortly.' };
    const reset = await stack.parley.fetch('/reset?user_id=u', { method: 'POST' });
    expect(reset.status).toBe(503);
    expect(await reset.json()).toEqual(unavailable);
    const feedback = await stack.parley.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run_id: '00000000-0000-4000-8000-000000000000', score: 1 }),
    });
    expect(feedback.status).toBe(503);
    expect(await feedback.json()).toEqual(unavailable);
    // A chat is counted against its user's limits before its stream starts: with the
    // database gone that is a clean 503 too, not a stream that ends in an error.
    const chat = await stack.parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hi', user_id: 'u' }),
    });
    expect(chat.status).toBe(503);
    expect(await chat.json()).toEqual(unavailable);

    await stack.proxy.restore();
    await expect
      .poll(async () => (await stack.parley.fetch('/health')).status, { timeout: 10_000 })
      .toBe(200);
    expect((await stack.parley.fetch('/documents')).status).toBe(200);
    expect(stack.parley.process.exitCode).toBeNull();
  });
});

describe('a PostgreSQL server whose connections go silent (a failover, a partition)', () => {
  const stack = behindProxy({ DB_REPLY_TIMEOUT_MS: '2000' });

  it('gives up on a connection that no longer answers, says so, and serves on new ones', async () => {
    expect((await stack.parley.fetch('/documents')).status).toBe(200);
    // Every open connection goes quiet for good, neither answered nor closed; new ones work.
    stack.proxy.silence();
    const asked = performance.now();
    const documents = await stack.parley.fetch('/documents', {
      signal: AbortSignal.timeout(30_000),
    });
    expect(documents.status).toBe(503);
    expect(await documents.json()).toEqual({
      detail: 'The database is unavailable; try again shortly.',
    });
    expect(performance.now() - asked).toBeLessThan(20_000);
    // The silent connection was dropped: the next requests get new ones.
    await expect
      .poll(async () => (await stack.parley.fetch('/documents')).status, { timeout: 20_000 })
      .toBe(200);
    await expect
      .poll(async () => (await stack.parley.fetch('/health')).status, { timeout: 20_000 })
      .toBe(200);
    expect(stack.parley.process.exitCode).toBeNull();
  });

  // A connection lost while checked out of the pool (a health check, a transaction) has no
  // pool listener for its 'error': unheard, Node's default ends the process. CI saw it once
  // in the cut test above, when a health check drew an idle connection whose end was on its way.
  it('keeps running when a connection in use (a health check) goes silent and is given up', async () => {
    expect((await stack.parley.fetch('/health')).status).toBe(200);
    stack.proxy.silence();
    const health = await stack.parley.fetch('/health');
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({ database: 'unreachable' });
    // The health check's connection is destroyed DB_REPLY_TIMEOUT_MS after its query was sent.
    await stack.parley.waitForLog(
      (line) => line.code === 'database_connection_lost' && line.inUse === true,
      20_000,
    );
    await expect
      .poll(async () => (await stack.parley.fetch('/health')).status, { timeout: 20_000 })
      .toBe(200);
    expect(stack.parley.process.exitCode).toBeNull();
  });
});

/**
 * SIGTERM while every PostgreSQL connection is silent (a failover, a partition: neither
 * answered nor closed). The stop must not wait on a socket that never answers: the process
 * exits 0 within the grace period and a few seconds (the database is given up on 2.5 s after
 * the grace period, its connections 0.5 s later; the last resort would exit 1 at 5 s), and its
 * log says, by code, which connections it gave up on. The server engine only: the embedded one
 * has no network to go silent.
 */
describe('SIGTERM while the PostgreSQL server is silent', () => {
  const GRACE_MS = 1_000;
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  const silentParley = async () => {
    const { llm, env, cleanup } = await engineSetup('server', {
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
    });
    cleanups.push(cleanup);
    const url = new URL(env.DATABASE_URL as string);
    const proxy = await startTcpProxy(url.hostname, Number(url.port || 5432));
    cleanups.push(() => proxy.close());
    url.host = `127.0.0.1:${proxy.port}`;
    const parley = await startParley({ env: { ...env, DATABASE_URL: url.toString() } });
    cleanups.push(async () => void (await parley.stop('SIGKILL')));
    return { llm, proxy, parley };
  };

  /** SIGTERM: the exit code, and whether the process exited within the grace period + 4.5 s. */
  const terminate = async (parley: RunningParley) => {
    const started = performance.now();
    const code = await parley.stop('SIGTERM');
    const ms = Math.round(performance.now() - started);
    return { code, exitedInTime: ms < GRACE_MS + 4_500, ms };
  };

  const expectCleanGiveUp = (parley: RunningParley) => {
    const messages = parley.logs.map((line) => line.msg);
    expect(messages).toContain('stopped');
    expect(messages).not.toContain('shutdown did not finish in time: exiting now');
    const gaveUp = parley.logs.filter((line) => line.code === 'database_close_timed_out');
    // The pool's connections, by code and count, without an error's frames. The connection
    // that listened for other replicas' runs is cut too, and said so, unless its keep-alive
    // query was under way at the stop (every 5 s): pg then destroys it itself, at once. Either
    // way it cannot hold the exit, which terminate() bounds.
    expect(gaveUp).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ connections: expect.any(Number), inUse: expect.any(Number) }),
      ]),
    );
    const listening = gaveUp.filter((line) => line.listening === true);
    expect(listening.length).toBeLessThanOrEqual(1);
    for (const line of listening) expect(line).toMatchObject({ connections: 1 });
    for (const line of gaveUp) expect(line).not.toHaveProperty('err');
    // Nothing printed a raw stack (an unhandled rejection, an uncaught error).
    expect(parley.output()).not.toMatch(/\n\s+at /);
  };

  it('exits 0 within the grace period and a few seconds, saying what it gave up on', async () => {
    const { proxy, parley } = await silentParley();
    expect((await parley.fetch('/documents')).status).toBe(200);
    proxy.silence();
    expect(await terminate(parley)).toMatchObject({ code: 0, exitedInTime: true });
    expectCleanGiveUp(parley);
  }, 60_000);

  it('does the same with an answer under way', async () => {
    const { llm, proxy, parley } = await silentParley();
    llm.enqueue(reply.text('Begun but never finished by the model.', { stallAfter: 3 }));
    const reader = streamReader(
      await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'go', user_id: 'silent' }),
      }),
    );
    await reader.until((raw) => raw.includes('Begun'));
    proxy.silence();
    expect(await terminate(parley)).toMatchObject({ code: 0, exitedInTime: true });
    expectCleanGiveUp(parley);
    // The stream was ended, not left hanging.
    await reader.rest();
  }, 60_000);
});

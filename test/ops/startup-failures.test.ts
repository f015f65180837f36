import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { spawnParley } from '../support/spawn-parley.ts';
import { startParley } from '../support/start-parley.ts';

/**
 * What an operator sees when Parley cannot start for something of theirs to fix (a setting, a
 * port, a directory, a database): exit 1 and one line on stderr saying what and which setting,
 * never a stack trace, never a secret, and nothing served.
 */
interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

async function startToExit(env: Record<string, string | undefined>): Promise<Exit> {
  const child = spawnParley({ PORT: '0', ...env });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr };
}

function expectOneClearLine(exit: Exit, pattern: RegExp): void {
  expect(exit.code).toBe(1);
  expect(exit.stderr).toMatch(pattern);
  expect(exit.stderr).not.toMatch(/\n\s+at /);
  expect(exit.stderr.trim().split('\n')).toHaveLength(1);
  expect(exit.stdout).not.toContain('Parley is listening');
}

describe.each(ENGINES)('start-up failures on the %s engine', (engine) => {
  const storages: EngineEnv[] = [];
  const dirs: string[] = [];
  const servers: Server[] = [];
  const setup = async (): Promise<Record<string, string>> => {
    const storage = await engineEnv(engine);
    storages.push(storage);
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-startup-'));
    dirs.push(dataDir);
    return { ...storage.env, DATA_DIR: dataDir };
  };
  afterAll(async () => {
    for (const server of servers) server.close();
    for (const storage of storages) await storage.cleanup();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('starts, serves and stops writing nothing on stderr: no library warning', async () => {
    // On a PostgreSQL server, each new connection's `SET DateStyle` was sent while the pool's
    // first query was already on its way: pg warned that pg@9 will refuse this.
    const parley = await startParley({ env: await setup() });
    try {
      expect((await parley.fetch('/documents')).status).toBe(200);
    } finally {
      expect(await parley.stop()).toBe(0);
    }
    expect(parley.output()).not.toMatch(/Warning|DEP\d+/);
  });

  it('refuses to start when ENV_FILE names a file that is not there, instead of ignoring it', async () => {
    // With the file ignored, its API_TOKEN was too: Parley served with no authentication.
    const missing = join(tmpdir(), 'parley-no-such-dir', 'parley.env');
    const exit = await startToExit({ ...(await setup()), ENV_FILE: missing });
    expectOneClearLine(exit, /^parley: ENV_FILE=.*parley\.env: there is no such file/);
  });

  it('reads the settings of the file ENV_FILE names', async () => {
    const env = await setup();
    const file = join(env.DATA_DIR as string, 'parley.env');
    writeFileSync(file, 'PORT=70000\n');
    const exit = await startToExit({ ...env, PORT: undefined, ENV_FILE: file });
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain('PORT: accepts a whole number from 0 to 65535 (got "70000")');
    expect(exit.stderr).not.toMatch(/\n\s+at /);
  });

  it('says in one line that PORT is taken by another process', async () => {
    const server = createServer();
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const exit = await startToExit({ ...(await setup()), PORT: String(port) });
    expectOneClearLine(
      exit,
      new RegExp(`^parley: 127\\.0\\.0\\.1:${port} is in use by another process: .*PORT`),
    );
  });

  it('says in one line that HOST is not a name this machine can resolve', async () => {
    const exit = await startToExit({
      ...(await setup()),
      HOST: 'parley-no-such-host.invalid',
      API_TOKEN: 'startup-failures-token',
    });
    expectOneClearLine(
      exit,
      /^parley: HOST=parley-no-such-host\.invalid is not a name this machine can resolve \(ENOTFOUND\)/,
    );
  });

  it('names a bad TELEGRAM_WEBHOOK_SECRET without writing the secret to the log', async () => {
    const secret = 'not-long-enough-but-secret';
    const exit = await startToExit({ ...(await setup()), TELEGRAM_WEBHOOK_SECRET: secret });
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain('TELEGRAM_WEBHOOK_SECRET: accepts 32-256');
    expect(exit.stderr).not.toContain(secret);
  });

  if (engine === 'embedded') {
    it('says in one line that DATA_DIR cannot be used when it is a file', async () => {
      const env = await setup();
      const file = join(env.DATA_DIR as string, 'not-a-directory');
      writeFileSync(file, '');
      const exit = await startToExit({ ...env, DATA_DIR: file });
      expectOneClearLine(exit, /^parley: DATA_DIR=.*not-a-directory cannot be used: .*EEXIST/);
    });
  }

  if (engine === 'server') {
    it('says in one line that the database DATABASE_URL names does not exist, without its password', async () => {
      const env = await setup();
      const url = new URL(env.DATABASE_URL as string);
      url.password = 'pw-not-for-logs';
      url.pathname = '/parley_no_such_database';
      const exit = await startToExit({ ...env, DATABASE_URL: url.href });
      expectOneClearLine(
        exit,
        /^parley: the PostgreSQL server of DATABASE_URL .*database "parley_no_such_database" does not exist \(3D000\)/,
      );
      expect(exit.stderr).not.toContain('pw-not-for-logs');
    });

    it('with PARLEY_WORKERS, stops with that line instead of replacing workers forever', async () => {
      // Every replacement met the same missing database: `npm start` never ended, and the
      // line came again and again while nothing was served.
      const env = await setup();
      const url = new URL(env.DATABASE_URL as string);
      url.pathname = '/parley_no_such_database';
      const started = Date.now();
      const exit = await startToExit({
        ...env,
        DATABASE_URL: url.href,
        PARLEY_WORKERS: '2',
        LLM_BASE_URL: 'http://127.0.0.1:9/v1',
      });
      expect(exit.code).toBe(1);
      expect(Date.now() - started).toBeLessThan(40_000);
      expect(exit.stderr).toMatch(
        /^parley: the PostgreSQL server of DATABASE_URL .*database "parley_no_such_database" does not exist \(3D000\)$/m,
      );
      expect(exit.stderr).not.toMatch(/\n\s+at /);
      expect(exit.stdout).toContain('a worker cannot start, and none would: stopping');
      expect(exit.stdout).not.toContain('Parley is listening');
    });

    it('with PARLEY_WORKERS, keeps replacing workers while the database server is down', async () => {
      const env = await setup();
      const port = await closedPort();
      const child = spawnParley({
        ...env,
        PORT: '0',
        DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/parley`,
        PARLEY_WORKERS: '2',
        LLM_BASE_URL: 'http://127.0.0.1:9/v1',
      });
      let stdout = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
      });
      const exited = once(child, 'exit');
      // A server that is down may come back (compose starts both at once): not given up on.
      const deadline = Date.now() + 60_000;
      while (!stdout.includes('starting another') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(stdout).toContain('worker exited unexpectedly; starting another');
      expect(child.exitCode).toBeNull();
      child.kill('SIGTERM');
      await exited;
    });

    it('says in one line that nothing answers at DATABASE_URL, without its password', async () => {
      const env = await setup();
      const port = await closedPort();
      const exit = await startToExit({
        ...env,
        DATABASE_URL: `postgres://postgres:pw-not-for-logs@127.0.0.1:${port}/parley`,
      });
      expectOneClearLine(
        exit,
        new RegExp(
          `^parley: cannot reach the PostgreSQL server of DATABASE_URL at 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`,
        ),
      );
      expect(exit.stderr).not.toContain('pw-not-for-logs');
    });
  }
});

/** A local port nothing listens on (taken, then let go): connecting to it is refused. */
async function closedPort(): Promise<number> {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as { port: number }).port;
  await new Promise((resolve) => closed.close(resolve));
  return port;
}

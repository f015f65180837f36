import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { spawnParley } from '../support/spawn-parley.ts';

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
  const setup = async (): Promise<Record<string, string>> => {
    const storage = await engineEnv(engine);
    storages.push(storage);
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-startup-'));
    dirs.push(dataDir);
    return { ...storage.env, DATA_DIR: dataDir };
  };
  afterAll(async () => {
    for (const storage of storages) await storage.cleanup();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
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

  it('names a bad TELEGRAM_WEBHOOK_SECRET without writing the secret to the log', async () => {
    const secret = 'not-long-enough-but-secret';
    const exit = await startToExit({ ...(await setup()), TELEGRAM_WEBHOOK_SECRET: secret });
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain('TELEGRAM_WEBHOOK_SECRET: accepts 32-256');
    expect(exit.stderr).not.toContain(secret);
  });
});

import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { spawnParley } from '../support/spawn-parley.ts';
import { startParley } from '../support/start-parley.ts';

/**
 * Protected mode: `HOST=0.0.0.0 npm start` without API_TOKEN would make everyone who can reach
 * the machine the administrator. Parley refuses to start so, says why and what to do, unless
 * PROTECTED_MODE=false says the operator means it.
 */
describe.each(ENGINES)('protected mode on the %s engine', (engine) => {
  const storages: EngineEnv[] = [];
  const dirs: string[] = [];
  const env = async (extra: Record<string, string>) => {
    const storage = await engineEnv(engine);
    storages.push(storage);
    return { ...storage.env, ...extra };
  };
  afterAll(async () => {
    for (const storage of storages) await storage.cleanup();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses to serve every interface without API_TOKEN, saying why and what to do', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-protected-'));
    dirs.push(dataDir);
    const child = spawnParley({
      ...(await env({ HOST: '0.0.0.0' })),
      PORT: '0',
      DATA_DIR: dataDir,
    });
    let stderr = '';
    let stdout = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(1);
    expect(stderr).toMatch(/^parley: HOST=0\.0\.0\.0 serves other machines/);
    expect(stderr).toContain('API_TOKEN');
    expect(stderr).toContain('PROTECTED_MODE=false');
    // One clear line for the operator, no stack; nothing was served.
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(stdout).not.toContain('Parley is listening');
  });

  it('serves every interface with API_TOKEN set', async () => {
    const parley = await startParley({
      env: await env({ HOST: '0.0.0.0', API_TOKEN: 'protected-mode-token' }),
    });
    try {
      expect((await parley.fetch('/health')).status).toBe(200);
      expect((await parley.fetch('/documents', { token: null })).status).toBe(401);
    } finally {
      await parley.stop();
    }
  });

  it('takes an IPv6 loopback in brackets, as in a URL, and serves it without a token', async () => {
    const parley = await startParley({ env: await env({ HOST: '[::1]' }) });
    try {
      const { port } = new URL(parley.url);
      expect((await fetch(`http://[::1]:${port}/documents`)).status).toBe(200);
    } finally {
      await parley.stop();
    }
  });

  it('serves every interface without a token when PROTECTED_MODE=false, and warns', async () => {
    const parley = await startParley({
      env: await env({ HOST: '0.0.0.0', PROTECTED_MODE: 'false' }),
    });
    try {
      expect((await parley.fetch('/documents')).status).toBe(200);
      await parley.waitForLog((line) => /PROTECTED_MODE is off/.test(line.msg));
    } finally {
      await parley.stop();
    }
  });
});

import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { spawnParley } from '../support/spawn-parley.ts';

/**
 * SIGTERM while Parley is still starting (an orchestrator stopping a replica it has just
 * started, an operator's Ctrl-C): once the port is open, start-up may still be starting the
 * job engine (pg-boss's tables and queues), Telegram and the model. A stop then is a stop like
 * any other: it waits for that work, starts nothing more, exits 0 and says "stopped". It
 * printed "could not start" with a stack and exited 1: the database was closed under the job
 * engine's start-up ("Cannot use a pool after calling end on the pool").
 */
describe.each(ENGINES)('a stop while starting, on the %s engine', (engine) => {
  let setup: EngineSetup;

  beforeAll(async () => {
    setup = await engineSetup(engine, { TELEGRAM_POLLING: 'false' });
  });
  afterAll(async () => {
    await setup?.cleanup();
  });

  it.each([0, 100])(
    'SIGTERM %i ms after the port is open: a clean stop, exit 0',
    async (delayMs) => {
      const moment = 'Server listening';
      const child = spawnParley({ ...setup.env, PORT: '0', DATA_DIR: setup.dataDir });
      let stdout = '';
      let stderr = '';
      let signalled = false;
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
        if (!signalled && stdout.includes(`"msg":"${moment}`)) {
          signalled = true;
          setTimeout(() => child.kill('SIGTERM'), delayMs);
        }
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const [code] = (await once(child, 'exit')) as [number | null];
      clearTimeout(timer);
      expect(signalled).toBe(true);
      expect(stderr).not.toContain('could not start');
      expect(stdout).toContain('"msg":"stopped"');
      expect(code).toBe(0);
    },
  );
});

import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * `npm start` keeps Node's module compile cache (src/start.ts), so a restart does not compile
 * the server's modules again. What an operator can see of it: after a start and a clean stop,
 * the cache is in the system's temporary directory; NODE_DISABLE_COMPILE_CACHE=1 keeps nothing
 * there. How much time it
 * saves is measured in bench/startup.ts, not here.
 */
describe('the module compile cache', () => {
  let tmp: string;
  let parley: RunningParley | undefined;
  afterEach(async () => {
    if (parley?.process.exitCode === null) await parley.stop('SIGKILL');
    parley = undefined;
    rmSync(tmp, { recursive: true, force: true });
  });

  /** The files under `dir`, recursively. */
  const filesUnder = (dir: string): string[] =>
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name));

  it('is kept in the temporary directory after a start and a clean stop', async () => {
    tmp = mkdtempSync(join(tmpdir(), 'parley-compile-cache-'));
    parley = await startParley({ env: { TMPDIR: tmp } });
    expect((await parley.fetch('/health')).status).toBe(200);
    expect(await parley.stop()).toBe(0);
    const cached = filesUnder(join(tmp, 'node-compile-cache'));
    // Modules of Parley's own and of its dependencies.
    expect(cached.length).toBeGreaterThan(100);
  });

  it('is not kept when the operator turns it off', async () => {
    tmp = mkdtempSync(join(tmpdir(), 'parley-compile-cache-'));
    parley = await startParley({ env: { TMPDIR: tmp, NODE_DISABLE_COMPILE_CACHE: '1' } });
    expect((await parley.fetch('/health')).status).toBe(200);
    expect(await parley.stop()).toBe(0);
    expect(readdirSync(tmp)).not.toContain('node-compile-cache');
  });
});

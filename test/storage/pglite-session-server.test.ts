import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PgliteSessionServer } from '../../src/storage/pglite-session-server.ts';

/** The embedded engine's socket server, on a real in-memory PGlite. */
describe('the PGlite session server', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  });

  async function serve() {
    const db = await PGlite.create();
    const dir = mkdtempSync(join(tmpdir(), 'parley-socket-'));
    const failures: unknown[] = [];
    const server = new PgliteSessionServer(db, { onEngineFailure: (e) => failures.push(e) });
    await server.listen(join(dir, '.s.PGSQL.5432'));
    cleanups.push(async () => {
      await server.close();
      if (!db.closed) await db.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const client = () => {
      const c = new pg.Client({ host: dir, port: 5432, user: 'postgres', database: 'postgres' });
      c.on('error', () => {});
      cleanups.push(() => c.end());
      return c;
    };
    return { db, failures, client };
  }

  it('serves a second connection once the first has gone, instead of refusing it', async () => {
    const { client } = await serve();
    const first = client();
    await first.connect();
    await first.query(`SET application_name = 'first'`);
    const second = client();
    const secondReady = second.connect().then(() => 'connected');
    // The session is the first client's until it leaves.
    const early = await Promise.race([
      secondReady,
      new Promise((resolve) => setTimeout(() => resolve('waiting'), 300)),
    ]);
    expect(early).toBe('waiting');
    await first.end();
    expect(await secondReady).toBe('connected');
    const { rows } = await second.query(`SELECT current_setting('application_name') AS name`);
    expect(rows).toEqual([{ name: '' }]);
  });

  it('delivers results far larger than the socket can take at once, intact', async () => {
    const { client } = await serve();
    const user = client();
    await user.connect();
    // ~10 MB, in rows that each name their number: a byte out of place would show.
    const { rows } = await user.query<{ n: number; t: string }>(
      `SELECT n, n::text || ':' || repeat('x', 200) AS t FROM generate_series(1, 50000) AS n`,
    );
    expect(rows).toHaveLength(50_000);
    expect(rows.every((row) => row.t === `${row.n}:${'x'.repeat(200)}`)).toBe(true);
    expect((await user.query('SELECT 1 AS x')).rows).toEqual([{ x: 1 }]);
  });

  it('reports PGlite failing underneath it once, and serves no one after', async () => {
    const { db, failures, client } = await serve();
    const user = client();
    await user.connect();
    expect((await user.query('SELECT 1 AS x')).rows).toEqual([{ x: 1 }]);

    await db.close(); // the engine is gone: every call into it now throws
    await expect(user.query('SELECT 1')).rejects.toThrow();
    await expect.poll(() => failures.length).toBe(1);

    const late = client();
    await expect(late.connect()).rejects.toThrow();
    expect(failures).toHaveLength(1);
  });
});

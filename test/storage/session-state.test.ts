import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.ts';
import { ChatContextRepository } from '../../src/storage/chat-context-repository.ts';
import { type Database, openDatabase } from '../../src/storage/database.ts';
import { users } from '../../src/storage/schema.ts';
import { ENGINES } from '../support/engines.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres-server.ts';

/**
 * What one pooled client leaves behind in its session must never reach the next one, whatever
 * way it ended. On a PostgreSQL server each connection is its own session; the embedded engine
 * has one session that its connections take in turn, so it must reset it between them. Every
 * case runs on both engines, through the real `openDatabase` pool.
 */
describe.each(ENGINES)('a database session on the %s engine', (engine) => {
  let database: Database;
  let server: TestDatabase | undefined;
  let dataDir: string;
  const pool = () => database.db.$client;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'parley-session-'));
    server = engine === 'server' ? await createTestDatabase() : undefined;
    database = await openDatabase(
      {
        ...parseConfig({ DB_POOL_MAX: '4' }),
        DATA_DIR: dataDir,
        DATABASE_URL: server?.url,
      },
      pino({ level: 'silent' }),
    );
  });
  afterAll(async () => {
    await database?.close();
    await server?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A pooled client that reports its own errors instead of crashing the test process. */
  const connect = async () => {
    const client = await pool().connect();
    const errors: Error[] = [];
    client.on('error', (error) => errors.push(error));
    return Object.assign(client, { errors });
  };
  /** pg-pool closes the client (as it does after a failed `pool.query`). */
  const drop = (client: pg.PoolClient) => client.release(true);
  /** The connection dies without a goodbye (a crash, a network cut). */
  const cut = (client: pg.PoolClient) => {
    (
      client as unknown as { connection: { stream: { destroy(): void } } }
    ).connection.stream.destroy();
    client.release(true);
  };

  /** A later client sees a session as fresh as a new backend's, and the chat read works. */
  const expectFreshSession = async () => {
    const client = await connect();
    try {
      const { rows } = await client.query<Record<string, string | boolean>>(`
        SELECT current_setting('statement_timeout') AS statement_timeout,
               current_setting('application_name') AS application_name,
               -- the chat read's own statement, prepared by a live client, is not a leftover
               (SELECT count(*) FROM pg_prepared_statements
                 WHERE name <> 'parley-chat-context')::int AS prepared,
               (SELECT count(*) FROM pg_class
                 WHERE relnamespace = pg_my_temp_schema())::int AS temp_tables,
               pg_current_xact_id_if_assigned() IS NULL AS outside_transaction`);
      expect(rows[0]).toEqual({
        statement_timeout: '0',
        application_name: '',
        prepared: 0,
        temp_tables: 0,
        outside_transaction: true,
      });
    } finally {
      client.release();
    }
    const context = await new ChatContextRepository(database.db).load('session-probe', 10);
    expect(context).toEqual({
      profile: undefined,
      history: [],
      leafRunId: null,
      toolServers: false,
    });
    expect(await database.check()).toBe('ok');
  };

  it('a named prepared statement is gone, and preparing the same name works', async () => {
    const first = await connect();
    await first.query({ name: 'parley-probe', text: 'SELECT 1 AS v' });
    drop(first);
    await expectFreshSession();
    const second = await connect();
    const { rows } = await second.query({ name: 'parley-probe', text: 'SELECT 2 AS v' });
    second.release();
    expect(rows).toEqual([{ v: 2 }]);
  });

  it('settings made with SET are back to their defaults', async () => {
    const client = await connect();
    await client.query(`SET statement_timeout = '5min'`);
    await client.query(`SET application_name = 'leftover'`);
    drop(client);
    await expectFreshSession();
  });

  it('temporary tables are gone', async () => {
    const client = await connect();
    await client.query('CREATE TEMP TABLE leftover (x int)');
    cut(client);
    await expectFreshSession();
  });

  it('session advisory locks are released', async () => {
    const client = await connect();
    await client.query('SELECT pg_advisory_lock(424242)');
    drop(client);
    // A PostgreSQL backend releases its locks as it exits, a moment after the client left.
    const other = await connect();
    let taken = false;
    for (let i = 0; i < 50 && !taken; i++) {
      const { rows } = await other.query<{ ok: boolean }>(
        'SELECT pg_try_advisory_lock(424242) AS ok',
      );
      taken = rows[0]?.ok === true;
      if (!taken) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await other.query('SELECT pg_advisory_unlock(424242)');
    other.release();
    expect(taken).toBe(true);
    await expectFreshSession();
  });

  it('an open transaction is rolled back: its writes are not kept', async () => {
    const client = await connect();
    await client.query('BEGIN');
    await client.query(`INSERT INTO users (user_id) VALUES ('uncommitted')`);
    cut(client);
    await expectFreshSession();
    expect(await database.db.select().from(users)).toEqual([]);
  });

  it('a failed transaction does not make the next statements fail (25P02)', async () => {
    const client = await connect();
    await client.query('BEGIN');
    await expect(client.query('SELECT 1/0')).rejects.toMatchObject({ code: '22012' });
    drop(client);
    await expectFreshSession();
  });

  it('an extended query sent without its Sync is abandoned', async () => {
    const client = await connect();
    const socket = (client as unknown as { connection: { stream: { write(b: Buffer): void } } })
      .connection.stream;
    // Parse "SELECT 1" as the unnamed statement, Bind it, and never send Sync.
    socket.write(message('P', Buffer.from('\0SELECT 1\0\0\0', 'latin1')));
    socket.write(message('B', Buffer.from('\0\0\0\0\0\0\0\0', 'latin1')));
    await new Promise((resolve) => setTimeout(resolve, 100));
    cut(client);
    await expectFreshSession();
  });

  it('a client sending garbage is refused with 08P01, and the next one is served', async () => {
    const client = await connect();
    const refused = new Promise<Error>((resolve) => client.once('error', resolve));
    const socket = (client as unknown as { connection: { stream: { write(b: Buffer): void } } })
      .connection.stream;
    socket.write(Buffer.from([0xff, 0, 0, 0, 8, 1, 2, 3, 4]));
    expect(await refused).toMatchObject({ code: '08P01' });
    drop(client);
    await expectFreshSession();
  });

  it('a constraint violation through pool.query (the client is dropped) leaves no trace', async () => {
    await new ChatContextRepository(database.db).load('before', 10); // prepares its statement
    await expect(
      pool().query(
        `INSERT INTO feedback (id, run_id, key, score)
         VALUES (gen_random_uuid(), gen_random_uuid(), 'k', 1)`,
      ),
    ).rejects.toMatchObject({ code: '23503' });
    await expectFreshSession();
  });

  it('a serialization failure inside a transaction is rolled back cleanly', async () => {
    await expect(
      database.db.transaction(async (tx) => {
        await tx.insert(users).values({ userId: 'serialization' });
        await tx.execute(
          `DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = 'serialization_failure'; END $$`,
        );
      }),
    ).rejects.toMatchObject({ cause: { code: '40001' } });
    expect(await database.db.select().from(users)).toEqual([]);
    await expectFreshSession();
  });

  it('a statement cancelled by its client: the server stops it, PGlite (which cannot) finishes it', async () => {
    const client = await connect();
    const result = client.query('SELECT pg_sleep(1.5), 1 AS done');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const running = (client as unknown as { activeQuery: pg.Query }).activeQuery;
    // pg's own cancel: a CancelRequest on a new connection (not in its type declarations).
    const canceller = new pg.Client(pool().options) as pg.Client & {
      cancel(client: pg.PoolClient, query: pg.Query): void;
    };
    canceller.cancel(client, running);
    if (engine === 'server') {
      await expect(result).rejects.toMatchObject({ code: '57014' });
    } else {
      // PGlite runs a statement to its end: a cancel request is acknowledged and ignored.
      expect((await result).rows).toEqual([{ pg_sleep: '', done: 1 }]);
    }
    drop(client);
    await expectFreshSession();
  });

  it('a connection cut in the middle of a statement does not stop the next client', async () => {
    const client = await connect();
    const pending = client.query('SELECT pg_sleep(0.5)').catch((error: Error) => error);
    await new Promise((resolve) => setTimeout(resolve, 100));
    cut(client);
    expect(await pending).toBeInstanceOf(Error);
    await expectFreshSession();
  });
});

/** A typed frontend message: type byte, length, body. */
function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([header, body]);
}

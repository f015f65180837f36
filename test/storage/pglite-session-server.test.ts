import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
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
    return { db, failures, client, socketPath: join(dir, '.s.PGSQL.5432') };
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

  // A message larger than a read arrives in pieces, and a piece can end inside a header or
  // hold the start of the next message: the server joins what it needs, once (joining at
  // every read was quadratic and held the engine for seconds on an 8 MB answer).
  it('reads messages cut at any byte: a split header, a 20 MB query, two sharing a write', async () => {
    const { socketPath } = await serve();
    const wire = await rawConnection(socketPath);
    cleanups.push(async () => {
      wire.close();
    });
    const startup = startupMessage();
    for (const piece of [startup.subarray(0, 1), startup.subarray(1, 6), startup.subarray(6)]) {
      await wire.send(piece);
    }
    expect((await wire.untilReady()).errors).toEqual([]);

    const long = 20_000_000;
    const both = Buffer.concat([
      queryMessage(`SELECT length('${'x'.repeat(long)}') AS n`),
      queryMessage(`SELECT 'second' AS n`),
    ]);
    const secondStart = both.length - queryMessage(`SELECT 'second' AS n`).length;
    const cuts = [1, 3, 5, 70_000, secondStart - 2, secondStart + 3];
    let from = 0;
    for (const cut of [...cuts, both.length]) {
      // 64 KB at a time in between, as a socket delivers them.
      for (let at = from; at < cut; at += 65_536)
        await wire.send(both.subarray(at, Math.min(cut, at + 65_536)));
      from = cut;
    }
    const first = await wire.untilReady();
    const second = await wire.untilReady();
    expect([first.errors, second.errors]).toEqual([[], []]);
    expect([first.values, second.values]).toEqual([[String(long)], ['second']]);
  });
});

function startupMessage(): Buffer {
  const body = Buffer.from('user\0postgres\0database\0postgres\0\0', 'latin1');
  const header = Buffer.alloc(8);
  header.writeInt32BE(8 + body.length, 0);
  header.writeInt32BE(196_608, 4); // protocol 3.0
  return Buffer.concat([header, body]);
}

function queryMessage(sql: string): Buffer {
  const body = Buffer.from(`${sql}\0`, 'utf8');
  const header = Buffer.alloc(5);
  header.write('Q', 0, 'latin1');
  header.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([header, body]);
}

/**
 * A client speaking the wire protocol by hand, so a test chooses where its bytes are cut:
 * `send` writes a piece and lets it go out on its own; `untilReady` answers the data rows'
 * first values and the error messages up to the next ReadyForQuery.
 */
async function rawConnection(path: string) {
  const socket: Socket = connect(path);
  await new Promise<void>((resolve, reject) =>
    socket.once('connect', resolve).once('error', reject),
  );
  let received = Buffer.alloc(0);
  const waiters: Array<() => void> = [];
  socket.on('data', (data) => {
    received = Buffer.concat([received, data]);
    for (const wake of waiters.splice(0)) wake();
  });
  const nextMessage = async (): Promise<{ type: string; body: Buffer }> => {
    while (received.length < 5 || received.length < 1 + received.readInt32BE(1)) {
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
    const length = 1 + received.readInt32BE(1);
    const message = {
      type: String.fromCharCode(received[0] as number),
      body: received.subarray(5, length),
    };
    received = received.subarray(length);
    return message;
  };
  return {
    send: (piece: Buffer) =>
      new Promise<void>((resolve, reject) =>
        socket.write(piece, (error) => (error ? reject(error) : setTimeout(resolve, 1))),
      ),
    async untilReady() {
      const values: string[] = [];
      const errors: string[] = [];
      for (let message = await nextMessage(); message.type !== 'Z'; message = await nextMessage()) {
        if (message.type === 'D')
          values.push(message.body.subarray(6, 6 + message.body.readInt32BE(2)).toString());
        if (message.type === 'E') errors.push(message.body.toString('latin1'));
      }
      return { values, errors };
    },
    close: () => {
      socket.destroy();
    },
  };
}

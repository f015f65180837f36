import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChatTurnQueue,
  SharedUserChatLock,
} from '../../src/assistant/shared-user-chat-lock.ts';
import { LocalUserChatLock, type UserChatLock } from '../../src/assistant/user-chat-lock.ts';
import { parseConfig } from '../../src/config.ts';
import { ChatTurnRepository } from '../../src/storage/chat-turn-repository.ts';
import { type Database, openDatabase } from '../../src/storage/database.ts';
import { ENGINES } from '../support/engines.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres-server.ts';

/** How long a chat may take to give up its place once its client has gone. */
const PROMPTLY_MS = 2_000;

/**
 * A client can leave at any moment of a chat's wait, including while its ticket is still being
 * written. Each engine's lock must then let it go at once, not when the chat in front ends:
 * the chat in front here never ends during the test. On the server engine that chat runs on
 * another replica (so the waiting one polls the database), and both locks use the real chat
 * queue; the only thing added is the moment the client leaves.
 */
describe.each(ENGINES)('a waiting chat whose client leaves, on the %s engine', (engine) => {
  let database: Database;
  let server: TestDatabase | undefined;
  let dataDir: string;
  let lock: UserChatLock;
  /** The lock of the replica whose chat is in front (the same lock on the embedded engine). */
  let front: UserChatLock;
  /** Set by a test: runs once the next ticket has been written, before the lock goes on. */
  let afterJoin: (() => void) | undefined;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'parley-lock-'));
    server = engine === 'server' ? await createTestDatabase() : undefined;
    database = await openDatabase(
      { ...parseConfig({}), DATA_DIR: dataDir, DATABASE_URL: server?.url },
      pino({ level: 'silent' }),
    );
    const real = new ChatTurnRepository(database.db);
    const queue: ChatTurnQueue = {
      join: async (userId, holder) => {
        const ticket = await real.join(userId, holder);
        afterJoin?.();
        return ticket;
      },
      tryTake: (...args) => real.tryTake(...args),
      heartbeat: (...args) => real.heartbeat(...args),
      leave: (...args) => real.leave(...args),
    };
    const replica = () =>
      new SharedUserChatLock({ queue, logger: pino({ level: 'silent' }), ttlMs: 30_000 });
    lock = engine === 'server' ? replica() : new LocalUserChatLock();
    front = engine === 'server' ? replica() : lock;
  });
  afterAll(async () => {
    await database?.close();
    await server?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const tickets = async (userId: string) => {
    const { rows } = await database.db.$client.query<{ n: string }>(
      'SELECT count(*) AS n FROM chat_turns WHERE user_id = $1',
      [userId],
    );
    return Number(rows[0]?.n);
  };

  /** Resolves with how the wait ended, or 'still waiting' after PROMPTLY_MS. */
  const settle = (wait: Promise<unknown>) =>
    Promise.race([
      wait.then(
        () => 'took the turn',
        (error: unknown) => (error instanceof Error ? error.name : String(error)),
      ),
      new Promise<string>((resolve) => setTimeout(resolve, PROMPTLY_MS, 'still waiting')),
    ]);

  const moments = [
    ['before it asked', 'before'],
    ['while it waited', 'wait'],
    // Only the server engine's lock writes a ticket.
    ...(engine === 'server' ? ([['while its ticket was being written', 'join']] as const) : []),
  ] as const;

  it.each(moments)('leaving %s gives its place up at once', async (_, moment) => {
    const userId = `leave-${moment}`;
    const first = await front.acquire(userId, new AbortController().signal);
    const client = new AbortController();
    if (moment === 'before') client.abort();
    if (moment === 'join') afterJoin = () => client.abort();
    const waiting = lock.acquire(userId, client.signal);
    if (moment === 'wait') setTimeout(() => client.abort(), 100);
    try {
      expect(await settle(waiting)).toBe('AbortError');
      afterJoin = undefined;
      // Its ticket is gone too: the user's next chat will not wait for it to expire.
      if (engine === 'server') expect(await tickets(userId)).toBe(1);
    } finally {
      afterJoin = undefined;
      await first.release();
    }
    const next = await lock.acquire(userId, new AbortController().signal);
    await next.release();
    if (engine === 'server') expect(await tickets(userId)).toBe(0);
  });
});

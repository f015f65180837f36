import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChatTurnQueue,
  SharedUserChatLock,
} from '../../src/assistant/shared-user-chat-lock.ts';
import { LocalUserChatLock, type UserChatLock } from '../../src/assistant/user-chat-lock.ts';
import { ChatTurnRepository } from '../../src/storage/chat-turn-repository.ts';
import type { Database } from '../../src/storage/database.ts';
import { ENGINES, type OpenTestDatabase, openTestDatabase } from '../support/engines.ts';

/**
 * A client can leave at any moment of a chat's wait, including while its ticket is still being
 * written. Each engine's lock must then let it go at once, not when the chat in front ends:
 * the chat in front here never ends during the test, so a lock that kept waiting would hang
 * until the test's timeout. On the server engine that chat runs on another replica (so the
 * waiting one polls the database), and both locks use the real chat queue; the only thing
 * added is the moment the client leaves.
 */
describe.each(ENGINES)('a waiting chat whose client leaves, on the %s engine', (engine) => {
  let opened: OpenTestDatabase | undefined;
  let database: Database;
  let lock: UserChatLock;
  /** The lock of the replica whose chat is in front (the same lock on the embedded engine). */
  let front: UserChatLock;
  /** Set by a test: run once the next ticket is written, and once a try finds the turn taken. */
  let afterJoin: (() => void) | undefined;
  let afterRefusedTry: (() => void) | undefined;

  beforeAll(async () => {
    opened = await openTestDatabase(engine);
    database = opened.database;
    const real = new ChatTurnRepository(database.db);
    const queue: ChatTurnQueue = {
      join: async (userId, holder) => {
        const ticket = await real.join(userId, holder);
        afterJoin?.();
        return ticket;
      },
      tryTake: async (...args) => {
        const took = await real.tryTake(...args);
        if (!took) afterRefusedTry?.();
        return took;
      },
      heartbeat: (...args) => real.heartbeat(...args),
      leave: (...args) => real.leave(...args),
    };
    const replica = () =>
      new SharedUserChatLock({ queue, logger: pino({ level: 'silent' }), ttlMs: 30_000 });
    lock = engine === 'server' ? replica() : new LocalUserChatLock();
    front = engine === 'server' ? replica() : lock;
  });
  afterAll(() => opened?.close());

  const tickets = async (userId: string) => {
    const { rows } = await database.db.$client.query<{ n: string }>(
      'SELECT count(*) AS n FROM chat_turns WHERE user_id = $1',
      [userId],
    );
    return Number(rows[0]?.n);
  };

  const moments = [
    ['before it asked', 'before'],
    ['while it waited', 'wait'],
    // Only the server engine's lock writes a ticket and asks the database for the turn.
    ...(engine === 'server'
      ? ([
          ['while its ticket was being written', 'join'],
          ['between two tries for the turn', 'try'],
        ] as const)
      : []),
  ] as const;

  it.each(moments)('leaving %s gives its place up at once', async (_, moment) => {
    const userId = `leave-${moment}`;
    const first = await front.acquire(userId, new AbortController().signal);
    const client = new AbortController();
    if (moment === 'before') client.abort();
    if (moment === 'join') afterJoin = () => client.abort();
    if (moment === 'try') afterRefusedTry = () => client.abort();
    try {
      const waiting = lock.acquire(userId, client.signal);
      if (moment === 'wait') setTimeout(() => client.abort(), 100);
      await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
      // Its ticket is gone too: the user's next chat will not wait for it to expire.
      if (engine === 'server') expect(await tickets(userId)).toBe(1);
    } finally {
      afterJoin = undefined;
      afterRefusedTry = undefined;
      await first.release();
    }
    const next = await lock.acquire(userId, new AbortController().signal);
    await next.release();
    if (engine === 'server') expect(await tickets(userId)).toBe(0);
  });
});

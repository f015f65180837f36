import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChatStack, startChatStack } from '../support/chat-stack.ts';
import { readChat } from '../support/chat-stream.ts';
import { reply } from '../support/fake-llm-server.ts';

/**
 * A busy database is not an unavailable one: under load, chats wait for a pooled connection
 * (on a saturated server a query holds its connection for a whole event-loop turn) and must
 * still be answered and stored, not failed as `database_unavailable` after a few seconds.
 */
describe('chats waiting for a busy database connection', () => {
  let stack: ChatStack;
  beforeAll(async () => {
    stack = await startChatStack({ DB_POOL_MAX: '1' });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const ask = async (message: string, user: string) =>
    readChat(await stack.chat({ message, user_id: user }));

  it('are answered and stored once the connection is free, even after several seconds', async () => {
    // Another client holds the history table for 6 s: the first chat's read waits for the
    // lock on the pool's only connection, the second chat waits for that connection.
    const blocker = new pg.Client({ connectionString: stack.database.url });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE messages IN ACCESS EXCLUSIVE MODE');
    stack.llm.enqueue(reply.text('first answer'), reply.text('second answer'));
    const first = ask('first', 'busy-a');
    const second = ask('second', 'busy-b');
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    await blocker.query('COMMIT');
    await blocker.end();

    const [a, b] = await Promise.all([first, second]);
    expect(a.error).toBeUndefined();
    expect(b.error).toBeUndefined();
    expect([a.text, b.text].sort()).toEqual(['first answer', 'second answer']);

    // Both turns were stored: each user's next chat carries its history.
    stack.llm.enqueue(reply.text('ok'));
    await ask('again', 'busy-b');
    const history = stack.llm.chats.at(-1)?.body.messages.filter((m) => m.role !== 'system');
    expect(history?.slice(0, 2).map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(history?.[0]?.content).toBe('second');
  }, 30_000);
});

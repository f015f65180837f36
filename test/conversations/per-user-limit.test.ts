import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';

const LIMIT = 3;

/**
 * CONVERSATIONS_PER_USER: an empty conversation weighs nothing against storage_mb, so without
 * a number a script could make rows without end. At the limit a new one is refused, on every
 * door, and deleting one makes room.
 */
describe.each(ENGINES)('conversations a user may keep, on the %s engine', (engine) => {
  let stack: TelegramStack;

  beforeAll(async () => {
    stack = await startTelegramStack(engine, { CONVERSATIONS_PER_USER: String(LIMIT) });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const create = (user: string) =>
    stack.parley.fetch(`/users/${user}/conversations`, { method: 'POST' });
  const listed = async (user: string) =>
    (
      (await (await stack.parley.fetch(`/users/${user}/conversations?limit=100`)).json()) as {
        conversations: { id: string }[];
      }
    ).conversations;

  it('refuses a new conversation past the limit with 422, until one is deleted', async () => {
    stack.llm.enqueue(reply.text('Hello.'));
    await readChat(
      await stack.parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'ana', message: 'hi' }),
      }),
    );
    // The chat's own conversation counts.
    for (let i = 1; i < LIMIT; i++) expect((await create('ana')).status).toBe(201);
    const refused = await create('ana');
    expect(refused.status).toBe(422);
    expect(((await refused.json()) as { detail: string }).detail).toBe(
      `You keep ${LIMIT} conversations, the most this server allows: delete some to start a new one.`,
    );
    expect(await listed('ana')).toHaveLength(LIMIT);
    // Another user has their own count.
    expect((await create('ben')).status).toBe(201);

    const [oldest] = (await listed('ana')).slice(-1);
    expect(
      (await stack.parley.fetch(`/users/ana/conversations/${oldest?.id}`, { method: 'DELETE' }))
        .status,
    ).toBe(200);
    expect((await create('ana')).status).toBe(201);
  });

  it('keeps the limit when many are asked for at once', async () => {
    const statuses = await Promise.all(
      Array.from({ length: 8 }, async () => (await create('cy')).status),
    );
    expect(statuses.filter((s) => s === 201)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 422)).toHaveLength(8 - LIMIT);
    expect(await listed('cy')).toHaveLength(LIMIT);
  });

  it("answers Telegram's /new at the limit with the reason, the chat going on as it was", async () => {
    await stack.link('dee', 530);
    for (let i = 0; i < LIMIT; i++) expect((await create('dee')).status).toBe(201);
    const from = stack.telegram.sentTo('530').length;
    stack.telegram.pushMessage(530, '/new');
    await stack.telegram.waitFor(() => stack.telegram.sentTo('530').length > from);
    expect(stack.telegram.sentTo('530')[from]?.visible).toContain(
      `You keep ${LIMIT} conversations`,
    );
    expect(await listed('dee')).toHaveLength(LIMIT);
  });
});

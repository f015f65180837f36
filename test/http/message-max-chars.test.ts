import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';

/**
 * MESSAGE_MAX_CHARS counts characters as a person does, on every door: an emoji outside the
 * Basic Multilingual Plane is one character, though it takes two UTF-16 units. `/chat` counted
 * so, while `/v1/chat/completions` and Telegram counted units and refused half as many emoji.
 * A message of exactly the limit in emoji is answered on each door, one more is refused on
 * each, and the three refusals name the limit in the same words.
 */

const MAX = 1_000; // below Telegram's 4,096 units even when each character takes two
const EMOJI = '😀';
const SAME_WORDS = `at most ${MAX} characters`;

describe.each(ENGINES)('MESSAGE_MAX_CHARS in emoji on the %s engine', (engine) => {
  let stack: TelegramStack;
  vi.setConfig({ testTimeout: 120_000 });

  beforeAll(async () => {
    stack = await startTelegramStack(engine, { MESSAGE_MAX_CHARS: String(MAX) });
    stack.llm.respond(() => reply.text('Seen.'));
  }, 200_000);
  afterAll(async () => {
    await stack?.stop();
  });

  const post = (path: string, body: unknown) =>
    stack.parley.fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  /** What the model was asked last: the question of the newest chat. */
  const lastQuestion = () => {
    const messages = stack.llm.chats.at(-1)?.body.messages ?? [];
    return messages.at(-1)?.content;
  };

  it('takes the limit in emoji on /chat, and refuses one more', async () => {
    const full = EMOJI.repeat(MAX);
    const answered = await post('/chat', { user_id: 'web', message: full });
    expect(answered.status).toBe(200);
    expect((await readChat(answered)).text).toBe('Seen.');
    expect(lastQuestion()).toBe(full);

    const calls = stack.llm.chats.length;
    const refused = await post('/chat', { user_id: 'web', message: EMOJI.repeat(MAX + 1) });
    expect(refused.status).toBe(422);
    const { detail } = (await refused.json()) as { detail: { loc: string[]; msg: string }[] };
    expect(detail).toEqual([
      expect.objectContaining({ loc: ['body', 'message'], msg: `must be ${SAME_WORDS}` }),
    ]);
    expect(stack.llm.chats).toHaveLength(calls);
  });

  it('takes the limit in emoji on /v1/chat/completions, and refuses one more', async () => {
    const full = EMOJI.repeat(MAX);
    const completion = (content: string) =>
      post('/v1/chat/completions', {
        model: 'parley',
        user: 'openai-client',
        messages: [{ role: 'user', content }],
      });
    const answered = await completion(full);
    expect(answered.status).toBe(200);
    const body = (await answered.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]?.message.content).toBe('Seen.');
    expect(lastQuestion()).toBe(full);

    const calls = stack.llm.chats.length;
    const refused = await completion(EMOJI.repeat(MAX + 1));
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      error: {
        message: `The last message must be ${SAME_WORDS}.`,
        param: 'messages[0].content',
        code: 'string_above_max_length',
      },
    });
    expect(stack.llm.chats).toHaveLength(calls);
  });

  it('takes the limit in emoji on Telegram, and refuses one more', async () => {
    await stack.link('telegram-user', 701);
    const full = EMOJI.repeat(MAX);
    const before = stack.telegram.sentTo('701').length;
    stack.telegram.pushMessage(701, full);
    // A refusal comes at once and has no buttons: seen here rather than by waiting for an answer.
    await stack.telegram.waitFor(() => stack.telegram.sentTo('701').length > before);
    expect(stack.telegram.sentTo('701')[before]?.visible).not.toContain('too long');
    const answer = await stack.answerAfter(701, before);
    expect(answer.map((message) => message.visible)).toEqual(['Seen.']);
    expect(lastQuestion()).toBe(full);

    const calls = stack.llm.chats.length;
    const from = stack.telegram.sentTo('701').length;
    stack.telegram.pushMessage(701, EMOJI.repeat(MAX + 1));
    await stack.telegram.waitFor(() => stack.telegram.sentTo('701').length > from);
    expect(stack.telegram.sentTo('701')[from]?.visible).toBe(
      `Your message is too long: ${SAME_WORDS}. Send a shorter one.`,
    );
    expect(stack.llm.chats).toHaveLength(calls);
  });
});

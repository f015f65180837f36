import { afterEach, describe, expect, it, vi } from 'vitest';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';

const CHAT = 903;
const from = { id: CHAT, is_bot: false, first_name: 'Test', language_code: 'en' };
const chat = { id: CHAT, type: 'private', first_name: 'Test' };
const date = () => Math.floor(Date.now() / 1000);

/**
 * Updates Telegram sends that are no plain message (a message with nothing Parley reads, a
 * button under an inline message, a kind not asked for), and shapes it never sends (fields
 * missing or of the wrong type, as a proxy or a bug in front could pass on). None may stop
 * the bot: each is answered or ignored, and the next message is answered as usual.
 */
const SENT_BY_TELEGRAM: Record<string, unknown>[] = [
  { message: { message_id: 1, date: date(), chat, from } },
  { message: { message_id: 2, date: date(), chat } },
  { callback_query: { id: 'cb-inline', from, chat_instance: 'ci', inline_message_id: 'im1' } },
  { my_chat_member: { chat, from, date: date() } },
];
const NEVER_SENT_BY_TELEGRAM: Record<string, unknown>[] = [
  { message: {} },
  { message: 'text' },
  { message: null },
  { message: { message_id: 3, date: date(), chat: {}, from, text: 'hello' } },
  { message: { message_id: 4, date: date(), chat, from, text: 42 } },
  { message: { message_id: 5, date: date(), chat, from, photo: 'big' } },
  { edited_message: {} },
  { callback_query: {} },
  { callback_query: { id: 'cb-odd', from: null, message: { chat: null } } },
];

describe.each(ENGINES)('Telegram updates of odd shapes, on the %s engine', (engine) => {
  vi.setConfig({ testTimeout: 400_000 });
  let stack: TelegramStack | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it('stops nothing: each is answered or ignored, and the next message is answered', async () => {
    stack = await startTelegramStack(engine);
    const s = stack;
    await s.link('odd', CHAT);
    const sentBefore = s.telegram.sentTo(String(CHAT)).length;
    for (const update of SENT_BY_TELEGRAM) s.telegram.pushUpdate(update);
    const malformed = NEVER_SENT_BY_TELEGRAM.map((update) => s.telegram.pushUpdate(update));
    s.llm.enqueue(reply.text('Still here.'));
    const answer = await s.ask(CHAT, 'are you there?');
    expect(answer.at(-1)?.visible).toBe('Still here.');
    await s.parley.settled(500);
    expect(s.parley.process.exitCode).toBeNull();
    expect((await s.parley.fetch('/health')).status).toBe(200);
    // A message with nothing Parley reads is told so (twice: with and without its sender);
    // the button under an inline message stops spinning.
    const unsupported = {
      visible: expect.stringMatching(/^This kind of message is not supported/),
    };
    expect(s.telegram.sentTo(String(CHAT)).slice(sentBefore, sentBefore + 2)).toEqual([
      expect.objectContaining(unsupported),
      expect.objectContaining(unsupported),
    ]);
    expect(s.telegram.callbackAnswers.map((a) => a.id)).toContain('cb-inline');
    // A shape Telegram never sends is a warning naming its update and fields, not an error.
    const ignored = s.parley.logs.filter(
      (line) => line.msg === 'Telegram update of an unexpected shape: ignored',
    );
    expect(ignored.map((line) => line.updateId)).toEqual(malformed);
    const errors = s.parley.logs.filter((line) => line.level >= 50).map((line) => line.msg);
    expect(errors).toEqual([]);
    s.llm.assertNoUnexpected();
  });
});

describe.each(ENGINES)('bad input to the Telegram webhook, on the %s engine', (engine) => {
  vi.setConfig({ testTimeout: 400_000 });
  let stack: TelegramStack | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it('is refused with an explained 4xx, and the bot goes on', async () => {
    stack = await startTelegramStack(engine, {
      TELEGRAM_POLLING: 'false',
      // Where Telegram is told to post (the test posts to Parley itself).
      TELEGRAM_WEBHOOK_URL: 'https://parley.example/telegram/webhook',
    });
    const s = stack;
    await s.telegram.waitFor(() => s.telegram.webhook !== undefined);
    const secret = s.telegram.webhook?.secret as string;
    const post = (body: string | Uint8Array, contentType = 'application/json') =>
      s.parley.fetch('/telegram/webhook', {
        method: 'POST',
        token: null,
        headers: { 'content-type': contentType, 'x-telegram-bot-api-secret-token': secret },
        body,
      });
    const bodies: [string, string | Uint8Array, string?][] = [
      ['nothing', ''],
      ['no JSON', '{"update_id": 1'],
      ['a list', '[{"update_id": 1}]'],
      ['null', 'null'],
      ['a string', '"update"'],
      ['no update_id', '{}'],
      ['a negative update_id', '{"update_id": -1}'],
      ['update_id as text', '{"update_id": "1"}'],
      ['a fractional update_id', '{"update_id": 1.5}'],
      ['an update_id past any integer', '{"update_id": 1e300}'],
      ['plain text', 'update_id=1', 'text/plain'],
      ['too large', JSON.stringify({ update_id: 1, message: { text: 'x'.repeat(3 << 20) } })],
    ];
    const failures: string[] = [];
    for (const [what, body, contentType] of bodies) {
      const response = await post(body, contentType);
      const text = await response.text();
      const detail = (() => {
        try {
          return (JSON.parse(text) as { detail?: unknown }).detail;
        } catch {
          return undefined;
        }
      })();
      if (
        response.status < 400 ||
        response.status >= 500 ||
        !(typeof detail === 'string' || (Array.isArray(detail) && detail.length > 0))
      ) {
        failures.push(`${what}: ${response.status} ${text.slice(0, 200)}`);
      }
    }
    expect(failures).toEqual([]);
    // A well-formed update is still taken (an unlinked chat is told how to link).
    const update = {
      update_id: 77,
      message: { message_id: 1, date: date(), chat, from, text: 'hi' },
    };
    expect((await post(JSON.stringify(update))).status).toBe(200);
    await s.telegram.waitFor(() => s.telegram.sentTo(String(CHAT)).length === 1);
    expect((await s.parley.fetch('/health')).status).toBe(200);
    const errors = s.parley.logs.filter((line) => line.level >= 50).map((line) => line.msg);
    expect(errors).toEqual([]);
  });
});

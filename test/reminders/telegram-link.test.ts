import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ENGINES } from '../support/engines.ts';
import { type ReminderStack, startReminderStack } from '../support/reminder-stack.ts';

/** Starting Parley took over 60 s while this machine was shared; a wait, not a speed check. */
const START_TIMEOUT_MS = 180_000;

describe.each(ENGINES)('linking a Telegram chat on the %s engine', (engine) => {
  let stack: ReminderStack;
  const chatOf = async (userId: string) =>
    (
      (await (await stack.parley.fetch(`/users/${userId}/profile`)).json()) as {
        telegram_chat_id: string | null;
      }
    ).telegram_chat_id;
  const issueCode = async (userId: string) => {
    const response = await stack.parley.fetch(`/users/${userId}/telegram-link`, { method: 'POST' });
    expect(response.status).toBe(200);
    return (await response.json()) as {
      code: string;
      command: string;
      deep_link: string;
      expires_at: string;
    };
  };
  /** The user sends the bot a message; resolves with the bot's reply. */
  const say = async (chatId: number, text: string, language = 'en') => {
    const before = stack.telegram.sentTo(String(chatId)).length;
    stack.telegram.pushMessage(chatId, text, language);
    await stack.telegram.waitFor(() => stack.telegram.sentTo(String(chatId)).length > before);
    return stack.telegram.sentTo(String(chatId)).at(-1)?.text;
  };

  vi.setConfig({ testTimeout: 120_000 });
  beforeAll(async () => {
    stack = await startReminderStack(engine, {
      start: '2030-01-01T00:00:00Z',
      env: { TELEGRAM_POLLING: 'true', TELEGRAM_BOT_USERNAME: 'parley_test_bot' },
    });
  }, START_TIMEOUT_MS);
  afterEach(() => stack.telegram.assertNoUnexpected());
  afterAll(async () => {
    // A long poll is in flight: shutting down must abort it, not wait it out.
    const code = await stack?.parley.stop();
    expect(code).toBe(0);
    await stack?.stop();
  });

  it('links the chat that sends a one-time code, never one that names a user', async () => {
    const link = await issueCode('carol');
    expect(link).toEqual({
      code: expect.stringMatching(/^[\w-]{10,}$/),
      command: `/start ${link.code}`,
      deep_link: `https://t.me/parley_test_bot?start=${link.code}`,
      expires_at: '2030-01-01T01:00:00.000Z',
    });

    expect(await say(777, '/start carol')).toBe(
      'This link code is unknown or has expired. Ask Parley for a new one.',
    );
    expect(await chatOf('carol')).toBeNull();

    expect(await say(778, `/start ${link.code}`)).toMatch(
      /^Linked\. Your reminder notices will come to this chat, and you can talk to your assistant here\./,
    );
    expect(await chatOf('carol')).toBe('778');
    // Spent: the same code from another chat links nothing.
    expect(await say(779, `/start ${link.code}`, 'ko')).toBe(
      '이 연결 코드는 없거나 만료되었습니다. Parley에서 새 코드를 받아 주세요.',
    );
    expect(await chatOf('carol')).toBe('778');

    // Notices now go to the linked chat.
    await stack.setReminder('carol', { title: 'Call mum', date: '2030-01-05' });
    await stack.tickAt('2030-01-04T09:00:00Z');
    expect(stack.telegram.sentTo('778').at(-1)?.text).toContain('(D-1): Call mum');
  });

  it('refuses a code after its hour, and a code replaced by a newer one', async () => {
    await stack.tickAt('2030-02-01T00:00:00Z');
    const old = await issueCode('dave');
    const newer = await issueCode('dave');
    expect(await say(880, `/start ${old.code}`)).toContain('unknown or has expired');
    await stack.tickAt('2030-02-01T01:00:01Z');
    expect(await say(881, `/start ${newer.code}`)).toContain('unknown or has expired');
    expect(await chatOf('dave')).toBeNull();
    expect(await say(882, '/start')).toBe('Send the link code you got from Parley: /start <code>');
    // Codes never reach the log.
    expect(stack.parley.output()).not.toContain(newer.code);
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import {
  type FakeTelegramServer,
  QUERY_TOO_OLD,
  startFakeTelegramServer,
} from './fake-telegram-server.ts';

let fake: FakeTelegramServer | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function call(server: FakeTelegramServer, method: string, body: unknown) {
  const response = await fetch(`${server.url}/bot${server.token}/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const refused = {
  status: 400,
  body: { ok: false, error_code: 400, description: QUERY_TOO_OLD },
};

describe('the fake Bot API answers callback queries as Telegram does', () => {
  it('takes one answer per delivered press, refusing unknown ids, second answers and late ones', async () => {
    const server = await startFakeTelegramServer();
    fake = server;
    const first = server.pushCallback(1, 1, 'x');
    const second = server.pushCallback(1, 1, 'y');

    // Not yet handed to the bot: Telegram knows no such query for it.
    expect(await call(server, 'answerCallbackQuery', { callback_query_id: first })).toEqual(
      refused,
    );
    const updates = await call(server, 'getUpdates', { offset: 0, timeout: 0 });
    expect((updates.body.result as unknown[]).length).toBe(2);

    expect(await call(server, 'answerCallbackQuery', { callback_query_id: first })).toEqual({
      status: 200,
      body: { ok: true, result: true },
    });
    expect(await call(server, 'answerCallbackQuery', { callback_query_id: first })).toEqual(
      refused,
    );
    expect(await call(server, 'answerCallbackQuery', { callback_query_id: 'cb999' })).toEqual(
      refused,
    );
    server.callbackWindowMs = 0;
    expect(await call(server, 'answerCallbackQuery', { callback_query_id: second })).toEqual(
      refused,
    );

    expect(server.callbackAnswers.map((a) => a.id)).toEqual([first]);
    expect(server.refusedCallbackAnswers.map((r) => r.reason)).toEqual([
      'unknown id',
      'answered twice',
      'unknown id',
      'too old',
    ]);
    expect(() => server.assertNoUnexpected()).toThrow(/answered twice/);
  });
});

describe('the fake Bot API limits a message as Telegram does', () => {
  it('counts the text shown, entities read and tags left out, and at most 32 KiB as sent', async () => {
    const server = await startFakeTelegramServer();
    fake = server;
    const send = (text: string, parse_mode?: string) =>
      call(server, 'sendMessage', { chat_id: 1, text, ...(parse_mode ? { parse_mode } : {}) });
    const tooLong = { ok: false, error_code: 400, description: 'Bad Request: message is too long' };

    // 4,096 shown, however long the HTML that shows it.
    expect((await send(`<b>${'&amp;'.repeat(4_096)}</b>`, 'HTML')).status).toBe(200);
    expect((await send(`<b>${'&amp;'.repeat(4_097)}</b>`, 'HTML')).body).toEqual(tooLong);
    // UTF-16 units: 2,048 emoji are 4,096 of them.
    expect((await send('😀'.repeat(2_048))).status).toBe(200);
    expect((await send(`a${'😀'.repeat(2_048)}`)).body).toEqual(tooLong);
    // The text as sent: at most 32 KiB, even when it shows little.
    expect((await send(`<b>a</b>${'<i></i>'.repeat(4_681)}`, 'HTML')).body).toEqual({
      ok: false,
      error_code: 400,
      description: 'Bad Request: text is too long',
    });
    // Nothing to show once parsed, or nothing at all.
    for (const [text, description] of [
      ['<pre></pre>', 'Bad Request: text must be non-empty'],
      ['<blockquote> </blockquote>\n', 'Bad Request: text must be non-empty'],
      ['', 'Bad Request: message text is empty'],
    ]) {
      expect((await send(text ?? '', 'HTML')).body).toEqual({
        ok: false,
        error_code: 400,
        description,
      });
    }
    expect(server.sent.map((m) => m.visible.length)).toEqual([4_096, 4_096]);
  });
});

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import type { SentMessage } from '../support/fake-telegram-server.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';

const keyboardOf = (message: SentMessage | undefined) =>
  (
    (message?.replyMarkup as { inline_keyboard?: { text: string; callback_data?: string }[][] })
      ?.inline_keyboard ?? []
  ).flat();

/**
 * Telegram takes a press's answer for some 15 seconds; after that (a slow database, a long
 * pause) it answers 400 "query is too old". That is Telegram's refusal, not Parley's failure:
 * the press is still carried out, logged below error with its code, and Parley goes on.
 */
describe.each(ENGINES)('a button press answered too late on the %s engine', (engine) => {
  let stack: TelegramStack;
  vi.setConfig({ testTimeout: 120_000 });

  beforeAll(async () => {
    stack = await startTelegramStack(engine);
    await stack.link('lena', 901);
  }, 200_000);
  afterAll(async () => {
    const code = await stack?.parley.stop();
    expect(code).toBe(0);
    await stack?.stop();
  });

  it('answers a press Telegram hands out twice only once', async () => {
    stack.llm.enqueue(reply.text('Rate me twice.'));
    const [answer] = await stack.ask(901, 'Another to rate.');
    const [, down] = keyboardOf(answer).map((b) => b.callback_data ?? '');
    const id = stack.telegram.pushCallback(901, answer?.messageId ?? 0, down ?? '');
    await stack.telegram.waitFor(() => stack.telegram.callbackAnswers.some((a) => a.id === id));
    const skipped = stack.parley.logs.length;
    // As if Telegram handed out again everything since the first update, this press too.
    stack.telegram.redeliverFrom(0);
    await stack.telegram.waitFor(() =>
      stack.parley.logs
        .slice(skipped)
        .some((l) => l.msg === 'Telegram update already taken: skipped'),
    );
    await stack.parley.settled(500);
    expect(stack.telegram.callbackAnswers.filter((a) => a.id === id)).toHaveLength(1);
    expect(stack.telegram.refusedCallbackAnswers).toEqual([]);
    stack.telegram.assertNoUnexpected();
  });

  it('logs the refusal with its code at warn or below and carries on', async () => {
    stack.llm.enqueue(reply.text('Rate me late.'));
    const [answer] = await stack.ask(901, 'Something to rate.');
    const [up] = keyboardOf(answer).map((b) => b.callback_data ?? '');
    const logsBefore = stack.parley.logs.length;

    // Every answer now comes after Telegram's window closed.
    stack.telegram.callbackWindowMs = 0;
    const id = stack.telegram.pushCallback(901, answer?.messageId ?? 0, up ?? '');
    await stack.telegram.waitFor(() =>
      stack.telegram.refusedCallbackAnswers.some((r) => r.id === id),
    );
    expect(stack.telegram.refusedCallbackAnswers).toEqual([
      expect.objectContaining({ id, reason: 'too old' }),
    ]);
    // The press itself counted: the chosen button is marked.
    await stack.telegram.waitFor(
      () => keyboardOf(stack.telegram.sentTo('901').at(-1))[0]?.text === '👍 ✓',
    );
    stack.telegram.callbackWindowMs = 15_000;

    // Parley carries on: the next message is answered.
    stack.llm.enqueue(reply.text('Still here.'));
    const next = await stack.ask(901, 'Are you there?');
    expect(next.map((m) => m.visible).join('')).toContain('Still here.');

    const logged = stack.parley.logs.slice(logsBefore);
    const refusal = logged.find((l) => l.msg === 'button press not acknowledged');
    expect(refusal).toMatchObject({ status: 400 });
    expect(refusal?.level).toBeLessThanOrEqual(40);
    expect(logged.filter((l) => (l.level as number) >= 50)).toEqual([]);
    // Only the refusal, nothing else the fake had to reject.
    expect(stack.telegram.unexpected.map((u) => u.reason)).toEqual([`too old: ${id}`]);
  });
});

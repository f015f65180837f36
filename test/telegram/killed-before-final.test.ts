import { afterEach, describe, expect, it, vi } from 'vitest';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';
import { waitFor } from '../support/wait-for.ts';

const START_TIMEOUT_MS = 200_000;
/** The smallest JOB_LEASE_SECONDS allows: a holder silent this long is dead. */
const LEASE_SECONDS = 10;
const CHAT = 541;
const QUESTION = 'Which bin goes out on Tuesday?';
const ANSWER = 'The green bin goes out on Tuesday evening.';

/**
 * The holder of a Telegram answer stores the turn (chat-service.ts, `runs.record`) before the
 * answer's `done`; only then does the chat's AnswerStream send the final message. A process
 * killed in between (here: while Telegram has the final sendMessage and has not answered it,
 * the fake's `hang`, so no timing is involved) left an answer stored and never sent. The run's
 * row is now the message's outbox: the next process that finds its holder dead (the restarted
 * one on the embedded engine, any replica within a lease or two on the server) sends it, once.
 */
describe.each(ENGINES)('a Telegram answer stored but not sent, on the %s engine', (engine) => {
  vi.setConfig({ testTimeout: START_TIMEOUT_MS * 2 });
  let stack: TelegramStack | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it('reaches the chat once after the holder is killed before its final message', async () => {
    stack = await startTelegramStack(engine, { JOB_LEASE_SECONDS: String(LEASE_SECONDS) });
    const s = stack;
    await s.link('fay', CHAT);
    const from = s.telegram.sentTo(String(CHAT)).length;
    const requested = s.telegram.sendRequests.length;
    s.llm.enqueue(reply.text(ANSWER));
    // The answer grows as a draft; its final message is the chat's next sendMessage.
    s.telegram.failNext({ kind: 'hang' });
    s.telegram.pushMessage(CHAT, QUESTION);
    await s.telegram.waitFor(() => s.telegram.sendRequests.length > requested);
    // The answer is stored: the user's history has it, though the chat has not.
    const history = async () =>
      ((await (await s.parley.fetch('/users/fay/history')).json()) as { turns: unknown[] }).turns;
    await waitFor(async () => (await history()).length === 1);
    expect(s.sentSince(CHAT, from)).toEqual([]);
    await s.restart('SIGKILL');

    await s.telegram.waitFor(
      () => s.sentSince(CHAT, from).length > 0,
      engine === 'server' ? (2 * LEASE_SECONDS + 5) * 1000 : 15_000,
    );
    await s.parley.settled(1_000);
    const sent = s.sentSince(CHAT, from);
    expect(sent.map((m) => m.visible)).toEqual([ANSWER]);
    expect(sent[0]?.replyMarkup).toBeDefined(); // 👍 / 👎, as on any finished answer
    expect(s.llm.chats).toHaveLength(1);
  });
});

import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { sseEvents, textOf } from '../support/resumable.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';
import { waitFor } from '../support/wait-for.ts';

const START_TIMEOUT_MS = 200_000;
/** The smallest JOB_LEASE_SECONDS allows: a holder silent this long is dead. */
const LEASE_SECONDS = 10;
/** QUIET_FLUSH_MS (1 s) and a margin: what a listener saw of a run nobody else follows is stored. */
const STORED_MS = 2_500;

const CHAT = 531;
const QUESTION = 'When is the rent due each month?';
const FULL = 'Rent is due on the first working day of the month.';
/** `stallAfter: 3`: the role chunk and two words (one chunk a word), then nothing. */
const PARTIAL = FULL.split(' ').slice(0, 2).join(' ');

interface Turn {
  run_id: string;
  question: string;
  answer: string;
  interrupted: boolean;
  status: string | null;
}

interface ConversationPage {
  conversation: { id: string; current: boolean };
  turns: Turn[];
  running: { run_id: string; question: string } | null;
}

/**
 * A process killed while it generates a Telegram answer: the answer runs as a detached run
 * (the mechanism of a resumable /chat), so the question and the answer as far as the user saw
 * it are kept in the chat's own conversation, marked interrupted, by the next process that
 * looks (on the embedded engine the restarted one, at start; with replicas, within a lease or
 * two), and they are stored once; the chat is told, once.
 */
describe.each(ENGINES)('a Telegram answer whose holder was killed, on the %s engine', (engine) => {
  vi.setConfig({ testTimeout: START_TIMEOUT_MS * 2 });
  let stack: TelegramStack | undefined;
  afterEach(async () => {
    try {
      stack?.telegram.assertNoUnexpected();
      stack?.llm.assertNoUnexpected();
    } finally {
      await stack?.stop();
      stack = undefined;
    }
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it("keeps the question and the partial answer in the chat's conversation, once", async () => {
    stack = await startTelegramStack(engine, { JOB_LEASE_SECONDS: String(LEASE_SECONDS) });
    const s = stack;
    await s.link('tess', CHAT);
    const conversation = async (id: string) =>
      (await (await s.parley.fetch(`/users/tess/conversations/${id}`)).json()) as ConversationPage;

    // The web client's current conversation, and the chat's own (`/new`): the answer belongs
    // in the chat's, never in the one that happens to be current.
    const created = await s.parley.fetch('/users/tess/conversations', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({}),
    });
    expect(created.status).toBe(201);
    const web = ((await created.json()) as { id: string }).id;
    const afterLink = s.telegram.sentTo(String(CHAT)).length;
    s.telegram.pushMessage(CHAT, '/new');
    await s.telegram.waitFor(() => s.sentSince(CHAT, afterLink).length > 0);
    expect(s.sentSince(CHAT, afterLink)[0]?.visible).toContain('Started a new conversation.');
    const listed = (await (await s.parley.fetch('/users/tess/conversations')).json()) as {
      conversations: { id: string; current: boolean }[];
    };
    expect(listed.conversations).toHaveLength(2);
    const own = listed.conversations.find((c) => c.id !== web)?.id as string;
    expect(listed.conversations.find((c) => c.current)?.id).toBe(web);

    // A few words, then nothing: the process dies before the model would have finished.
    s.llm.enqueue(reply.text(FULL, { stallAfter: 3 }));
    const from = s.telegram.sentTo(String(CHAT)).length;
    const drafted = s.telegram.drafts.length;
    s.telegram.pushMessage(CHAT, QUESTION);
    const shown = () =>
      s.telegram.drafts
        .slice(drafted)
        .filter((d) => d.chatId === String(CHAT))
        .at(-1)?.visible;
    // What the user saw: the answer so far, as a draft (plain words: shown as written).
    await s.telegram.waitFor(() => shown() === PARTIAL);
    // The run registered its turn in the chat's conversation: a second device sees it running.
    let runId = '';
    await waitFor(async () => {
      const running = (await conversation(own)).running;
      runId = running?.question === QUESTION ? running.run_id : '';
      return runId !== '';
    });
    await new Promise((resolve) => setTimeout(resolve, STORED_MS));
    // Still generating when it dies: no final message went out.
    expect(s.sentSince(CHAT, from)).toEqual([]);
    await s.restart('SIGKILL');

    // With replicas, a dead holder is one silent past the lease, looked for every lease.
    await waitFor(
      async () => (await conversation(own)).turns.some((turn) => turn.run_id === runId),
      engine === 'server' ? (2 * LEASE_SECONDS + 5) * 1000 : 10_000,
    );
    const kept = await conversation(own);
    expect(kept.turns).toHaveLength(1);
    expect(kept.turns[0]).toMatchObject({
      run_id: runId,
      question: QUESTION,
      answer: PARTIAL,
      interrupted: true,
      status: 'interrupted',
    });
    // Exactly what Telegram showed, a beginning of what the model meant to say.
    const answer = kept.turns[0]?.answer ?? '';
    expect(answer).not.toBe('');
    expect(answer).toBe(shown());
    expect(FULL.startsWith(answer)).toBe(true);
    expect(kept.running).toBeNull();
    // Not in the web client's current conversation, which stays current and empty.
    const history = (await (await s.parley.fetch('/users/tess/history')).json()) as {
      turns: Turn[];
    };
    expect(history.turns).toEqual([]);
    expect((await conversation(web)).conversation.current).toBe(true);

    // A client that comes back to the run reads the words the user saw, then why it ended.
    const events = sseEvents(
      await (await s.parley.fetch(`/users/tess/runs/${runId}/events`)).text(),
    );
    expect(textOf(events)).toBe(PARTIAL);
    expect(events.map((event) => event.data).join('\n')).toContain('run_interrupted');
    // Ended by its code, without the user's words.
    const line = await s.parley.waitForLog((l) => l.msg === 'a run whose holder died was ended');
    expect(line.code).toBe('run_interrupted');
    expect(line.runId).toBe(runId);
    expect(s.parley.output()).not.toContain('rent due each month');

    // The chat, whose draft vanished with the process, is told: the answer as far as it was
    // stored, then why it stopped (by code in the log, without the words).
    await s.telegram.waitFor(() => s.sentSince(CHAT, from).length > 0, 10_000);
    const told = await s.parley.waitForLog(
      (l) => l.msg === 'Telegram chat told of its cut-off answer',
    );
    expect(told).toMatchObject({ code: 'run_interrupted', runId });
    expect(s.sentSince(CHAT, from).map((m) => m.visible)).toEqual([
      `${PARTIAL}\n\n⚠️ The server stopped while writing the answer to “${QUESTION}”. What it had written is above and kept in the conversation; send the message again for a whole answer.`,
    ]);

    // Stored once, and the question was not taken (and answered) again after the restart.
    await s.parley.settled(500);
    const again = await conversation(own);
    expect(again.turns.filter((turn) => turn.run_id === runId)).toHaveLength(1);
    expect(again.turns).toHaveLength(1);
    expect(s.llm.chats).toHaveLength(1);
    expect(s.sentSince(CHAT, from).filter((m) => m.replyMarkup !== undefined)).toEqual([]);
    // Told once, by the one process that ended the run.
    expect(s.sentSince(CHAT, from)).toHaveLength(1);
  });
  it('tells a chat whose answer died before its first word, in its language', async () => {
    stack = await startTelegramStack(engine, { JOB_LEASE_SECONDS: String(LEASE_SECONDS) });
    const s = stack;
    const chat = 532;
    const question = '이번 달 관리비는 언제 내나요?';
    await s.link('uma', chat);
    // The role chunk, then nothing: not one word of the answer was written.
    s.llm.enqueue(reply.text(FULL, { stallAfter: 1 }));
    const from = s.telegram.sentTo(String(chat)).length;
    s.telegram.pushMessage(chat, question, 'ko');
    await waitFor(() => s.llm.chats.length === 1);
    await new Promise((resolve) => setTimeout(resolve, STORED_MS));
    await s.restart('SIGKILL');

    await s.telegram.waitFor(
      () => s.sentSince(chat, from).length > 0,
      engine === 'server' ? (2 * LEASE_SECONDS + 5) * 1000 : 10_000,
    );
    await s.parley.settled(500);
    expect(s.sentSince(chat, from).map((m) => m.visible)).toEqual([
      `⚠️ “${question}”에 답하기 전에 서버가 멈췄습니다. 메시지를 다시 보내 주세요.`,
    ]);
    const history = (await (await s.parley.fetch('/users/uma/history')).json()) as {
      turns: Turn[];
    };
    expect(history.turns).toEqual([
      expect.objectContaining({ question, answer: '', status: 'interrupted' }),
    ]);
    expect(s.parley.output()).not.toContain(question);
  });
});

import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import type { SentMessage } from '../support/fake-telegram-server.ts';
import { lockTable } from '../support/table-lock.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';

const EVERYTHING = fileURLToPath(
  import.meta.resolve('@modelcontextprotocol/server-everything/dist/index.js'),
);

type Button = { text: string; callback_data: string };
const keyboardOf = (message: SentMessage | undefined): Button[] =>
  (
    (message?.replyMarkup as { inline_keyboard?: Button[][] } | undefined)?.inline_keyboard ?? []
  ).flat();

/**
 * A tool call that needs the user's decision, asked on Telegram (issue 33): the question with
 * the tool, the server and the arguments, and inline buttons, through the fake Bot API's
 * callback queries; the reference MCP server (untrusted: every call asks) does the work.
 */
describe.each(ENGINES)('MCP approvals on Telegram, on the %s engine', (engine) => {
  let stack: TelegramStack;
  const chatId = 611;

  beforeAll(async () => {
    stack = await startTelegramStack(engine);
    await stack.link('hana', chatId);
    const created = await stack.parley.fetch('/admin/mcp-servers', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        transport: 'stdio',
        name: 'everything',
        command: process.execPath,
        args: [EVERYTHING, 'stdio'],
      }),
    });
    const { id } = (await created.json()) as { id: string };
    const enabled = await stack.parley.fetch(`/admin/mcp-servers/${id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: true }),
    });
    expect(enabled.status).toBe(200);
  }, 180_000);
  afterAll(() => stack?.stop());

  const toolResult = (id: string) =>
    stack.llm.chats
      .flatMap((chat) => chat.body.messages)
      .find((m) => m.role === 'tool' && m.tool_call_id === id)?.content;
  /** The user writes; resolves with the bot's question (the message with Approve on it). */
  const askedAbout = async (text: string) => {
    const from = stack.telegram.sentTo(String(chatId)).length;
    stack.telegram.pushMessage(chatId, text);
    await stack.telegram.waitFor(
      () =>
        stack.sentSince(chatId, from).some((m) => keyboardOf(m).some((b) => b.text === 'Approve')),
      60_000,
    );
    // The question, not an earlier answer's rating buttons sent meanwhile.
    const question = stack
      .sentSince(chatId, from)
      .find((m) => keyboardOf(m).some((b) => b.text === 'Approve'));
    return { question: question as SentMessage, from };
  };
  const press = async (message: SentMessage, label: string, buttons = keyboardOf(message)) => {
    const data = buttons.find((b) => b.text === label)?.callback_data ?? '';
    const before = stack.telegram.callbackAnswers.length;
    stack.telegram.pushCallback(chatId, message.messageId, data);
    await stack.telegram.waitFor(() => stack.telegram.callbackAnswers.length > before);
    return stack.telegram.callbackAnswers.at(-1)?.text;
  };

  it('asks with buttons, runs the call once approved, and takes the buttons away', async () => {
    stack.llm.enqueue(
      reply.toolCalls([{ id: 'tg-sum', name: 'everything__get-sum', args: { a: 6, b: 7 } }]),
      reply.text('Thirteen.'),
    );
    const { question, from } = await askedAbout('6 + 7?');
    expect(question.visible).toBe(
      `Run the tool get-sum of everything with these arguments?\n${JSON.stringify({ a: 6, b: 7 }, null, 2)}`,
    );
    expect(keyboardOf(question).map((b) => b.text)).toEqual(['Approve', 'Deny', 'Always allow']);
    expect(toolResult('tg-sum')).toBeUndefined();
    const buttons = keyboardOf(question);
    expect(await press(question, 'Approve')).toBe('Approved.');
    await stack.telegram.waitFor(
      () =>
        stack
          .sentSince(chatId, from)
          .some(
            (m) => m.visible.includes('Thirteen.') || m.edits.some((e) => e.includes('Thirteen.')),
          ),
      60_000,
    );
    expect(toolResult('tg-sum')).toBe('The sum of 6 and 7 is 13.');
    await stack.telegram.waitFor(() =>
      stack.telegram
        .callsOf('editMessageReplyMarkup')
        .some((c) => c.body.message_id === question.messageId),
    );
    // A second press of the same question changes nothing.
    expect(keyboardOf(question)).toEqual([]);
    expect(await press(question, 'Deny', buttons)).toBe('Approved.');
  });

  it('shows long arguments cut between characters, never inside an emoji', async () => {
    // The arguments are cut at 3000 UTF-16 units (Telegram counts its limit so); an odd
    // prefix put that cut in the middle of an emoji, and half of one is not UTF-8.
    const message = `y${'🦉'.repeat(2000)}`;
    stack.llm.enqueue(
      reply.toolCalls([{ id: 'tg-owl', name: 'everything__echo', args: { message } }]),
      reply.text('Not echoed.'),
    );
    const { question, from } = await askedAbout('echo owls');
    const args = JSON.stringify({ message }, null, 2);
    expect(question.visible.isWellFormed()).toBe(true);
    expect(question.visible).toBe(
      `Run the tool echo of everything with these arguments?\n${args.slice(0, 2999)}…`,
    );
    expect(await press(question, 'Deny')).toBe('Denied: the tool is not run.');
    // The answer ends before the next case asks (its rating buttons are not that question).
    await stack.telegram.waitFor(
      () =>
        stack
          .sentSince(chatId, from)
          .some(
            (m) =>
              m.visible.includes('Not echoed.') || m.edits.some((e) => e.includes('Not echoed.')),
          ),
      60_000,
    );
  });

  it('does not run a denied call, and the model is told so', async () => {
    stack.llm.enqueue(
      reply.toolCalls([{ id: 'tg-echo', name: 'everything__echo', args: { message: 'hi' } }]),
      reply.text('Not echoed.'),
    );
    const { question } = await askedAbout('echo hi');
    expect(await press(question, 'Deny')).toBe('Denied: the tool is not run.');
    await stack.telegram.waitFor(() => toolResult('tg-echo') !== undefined, 30_000);
    expect(toolResult('tg-echo')).toBe('Not run: the user denied this call.');
  });

  it('answers a press that comes after the answer stopped waiting, in words', async () => {
    // Only the call: the answer is stopped before the model would be asked again.
    stack.llm.enqueue(
      reply.toolCalls([{ id: 'tg-late', name: 'everything__get-sum', args: { a: 8, b: 8 } }]),
    );
    const { question } = await askedAbout('8 + 8?');
    const get = async <T>(path: string) => (await (await stack.parley.fetch(path)).json()) as T;
    const running = async () => {
      const { conversations } = await get<{ conversations: { id: string }[] }>(
        '/users/hana/conversations',
      );
      for (const { id } of conversations) {
        const read = await get<{ running: { run_id: string } | null }>(
          `/users/hana/conversations/${id}`,
        );
        if (read.running) return read.running.run_id;
      }
      return undefined;
    };
    const runId = await running();
    expect(runId).toBeDefined();
    const stopped = await stack.parley.fetch(`/users/hana/runs/${runId}/stop`, { method: 'POST' });
    expect(stopped.status).toBeLessThan(300);
    await expect.poll(running, { timeout: 30_000 }).toBeUndefined();
    expect(await press(question, 'Approve')).toBe('Too late: the tool was not run.');
    expect(toolResult('tg-late')).toBeUndefined();
  });

  it('answers a press for a question it does not know, in words', async () => {
    const question = { messageId: 1 } as SentMessage;
    const gone = [{ text: 'Approve', callback_data: 'a:00000000-0000-4000-8000-000000000000:y' }];
    expect(await press(question, 'Approve', gone)).toBe('This question is no longer open.');
  });
});

/**
 * A press whose decision cannot be stored (the database failed the query) is answered with a
 * short text, so its button stops spinning, and the question keeps its buttons to press again.
 * Only a PostgreSQL server lets a test fail one query from outside: a table is held, and the
 * query waiting for it is ended (pg_terminate_backend).
 */
describe('an approval press that cannot be stored, on the server engine', () => {
  let stack: TelegramStack;
  const chatId = 612;

  beforeAll(async () => {
    stack = await startTelegramStack('server');
    await stack.link('mina', chatId);
    const created = await stack.parley.fetch('/admin/mcp-servers', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        transport: 'stdio',
        name: 'everything',
        command: process.execPath,
        args: [EVERYTHING, 'stdio'],
      }),
    });
    const { id } = (await created.json()) as { id: string };
    await stack.parley.fetch(`/admin/mcp-servers/${id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: true }),
    });
  }, 180_000);
  afterAll(() => stack?.stop());

  const isApprove = (button: Button) => button.text === 'Approve';
  /** Ends the query that waits for `table` (held by the test), as a database failure would. */
  const failWaiting = async (table: string) => {
    const admin = new pg.Client({ connectionString: stack.env.DATABASE_URL as string });
    await admin.connect();
    try {
      await expect
        .poll(
          async () =>
            (
              await admin.query(
                `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
                  WHERE datname = current_database() AND wait_event_type = 'Lock'
                    AND query ILIKE $1`,
                [`%${table}%`],
              )
            ).rows[0].n,
          { timeout: 10_000 },
        )
        .toBeGreaterThan(0);
    } finally {
      await admin.end();
    }
  };
  const pressWhileFailing = async (
    question: SentMessage,
    label: string,
    table: string,
    matching = table,
  ) => {
    const release = await lockTable(stack.env.DATABASE_URL as string, table);
    try {
      const data = keyboardOf(question).find((b) => b.text === label)?.callback_data ?? '';
      const before = stack.telegram.callbackAnswers.length;
      stack.telegram.pushCallback(chatId, question.messageId, data);
      await failWaiting(matching);
      await stack.telegram.waitFor(() => stack.telegram.callbackAnswers.length > before, 10_000);
      return stack.telegram.callbackAnswers.at(-1)?.text;
    } finally {
      await release();
    }
  };

  it.each([
    ['finding whose chat it is', 'telegram_chats', 'telegram_chats'],
    ['storing the decision', 'tool_approvals', 'update "tool_approvals"'],
  ])('answers the press when %s fails, and takes it again', async (_what, table, matching) => {
    stack.llm.enqueue(
      reply.toolCalls([{ id: `busy-${table}`, name: 'everything__get-sum', args: { a: 1, b: 1 } }]),
      reply.text('Two.'),
    );
    const from = stack.telegram.sentTo(String(chatId)).length;
    stack.telegram.pushMessage(chatId, '1 + 1?');
    await stack.telegram.waitFor(
      () => stack.sentSince(chatId, from).some((m) => keyboardOf(m).some(isApprove)),
      60_000,
    );
    const question = stack.sentSince(chatId, from).find((m) => keyboardOf(m).some(isApprove));
    if (!question) throw new Error('no question');
    expect(await pressWhileFailing(question, 'Approve', table, matching)).toBe(
      'Something went wrong on our side; please try again in a moment.',
    );
    // Not decided: the buttons stay, and a press now is taken.
    expect(keyboardOf(question).map((b) => b.text)).toEqual(['Approve', 'Deny', 'Always allow']);
    const data = keyboardOf(question).find((b) => b.text === 'Approve')?.callback_data ?? '';
    const before = stack.telegram.callbackAnswers.length;
    stack.telegram.pushCallback(chatId, question.messageId, data);
    await stack.telegram.waitFor(() => stack.telegram.callbackAnswers.length > before);
    expect(stack.telegram.callbackAnswers.at(-1)?.text).toBe('Approved.');
    await stack.telegram.waitFor(
      () =>
        stack
          .sentSince(chatId, from)
          .some((m) => m.visible.includes('Two.') || m.edits.some((e) => e.includes('Two.'))),
      60_000,
    );
  });
});

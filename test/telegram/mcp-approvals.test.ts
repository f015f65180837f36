import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import type { SentMessage } from '../support/fake-telegram-server.ts';
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
    const question = stack.sentSince(chatId, from).find((m) => keyboardOf(m).length > 0);
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
});

import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { ENGINES } from '../support/engines.ts';
import type { ChatCompletionRequest } from '../support/fake-llm-server.ts';
import { reply } from '../support/fake-llm-server.ts';
import type { SentMessage } from '../support/fake-telegram-server.ts';
import { longestHealthWait } from '../support/health-during.ts';
import { PDFS } from '../support/ingest-client.ts';
import { makePdf } from '../support/make-pdf.ts';
import { holdAt, sseEvents, textOf } from '../support/resumable.ts';
import { startTelegramStack, type TelegramStack, TOKEN } from '../support/telegram-stack.ts';
import { waitFor } from '../support/wait-for.ts';

const START_TIMEOUT_MS = 200_000;

/** Every text the model was sent in one request (all roles), for "what did it see". */
const seen = (body: ChatCompletionRequest) => JSON.stringify(body.messages);

describe.each(ENGINES)('Telegram chat on the %s engine', (engine) => {
  let stack: TelegramStack;
  vi.setConfig({ testTimeout: 120_000 });

  beforeAll(async () => {
    // Below Telegram's own 4,096: a longer message can reach the bot.
    stack = await startTelegramStack(engine, { MESSAGE_MAX_CHARS: '4000' });
  }, START_TIMEOUT_MS);
  afterEach(() => {
    stack.telegram.assertNoUnexpected();
    stack.llm.assertNoUnexpected();
  });
  afterAll(async () => {
    const code = await stack?.parley.stop();
    expect(code).toBe(0);
    await stack?.stop();
  });

  // Cutting an answer into Telegram parts rescanned a long run of spaces for every part: an
  // answer with 4 MB of them held every other request for seconds at each streaming update.
  it('keeps answering other requests while it streams an answer with a long run of spaces', async () => {
    await stack.link('spacey', 509);
    stack.llm.enqueue(
      reply.text(`Start.${' '.repeat(4_000_000)}End.`, { chunks: 8, delayMs: 300 }),
    );
    const asked = stack.ask(509, 'Say it with room.');
    const longestWaitMs = await longestHealthWait(stack.parley, asked);
    expect((await asked).map((m) => m.visible.trim())).toEqual(['Start.', 'End.']);
    expect(longestWaitMs).toBeLessThan(3_000);
  });

  // A heading's text was read with an expression that tried every way of sharing a run of
  // spaces inside it: cubic, 17 s for 4,000 spaces, at every streaming update.
  it('keeps answering other requests while it streams a heading with a long run of spaces', async () => {
    await stack.link('heading', 510);
    stack.llm.enqueue(reply.text(`# Tides${' '.repeat(3_500)}today`, { chunks: 4, delayMs: 300 }));
    const asked = stack.ask(510, 'Title it.');
    const longestWaitMs = await longestHealthWait(stack.parley, asked);
    const messages = await asked;
    expect(messages.map((m) => m.visible.replace(/ +/g, ' '))).toEqual(['Tides today']);
    expect(messages[0]?.text.startsWith('<b>Tides')).toBe(true);
    expect(longestWaitMs).toBeLessThan(3_000);
  });

  // Inline code and links were found with expressions tried at every position of a line,
  // each reading to the line's end when it failed: quadratic in a run of backticks or of `[`,
  // for every part at every streaming update.
  it('keeps answering other requests while it streams long runs of backticks and brackets', async () => {
    await stack.link('marks', 511);
    const paragraphs = [
      '`'.repeat(3_900),
      '['.repeat(3_900),
      `${'`'.repeat(1_900)}${'a'.repeat(1_900)}`,
      `${'['.repeat(1_900)}](http://${'x'.repeat(1_900)}`,
    ];
    stack.llm.enqueue(reply.text(paragraphs.join('\n\n'), { chunks: 8, delayMs: 150 }));
    const asked = stack.ask(511, 'Mark it.');
    const longestWaitMs = await longestHealthWait(stack.parley, asked);
    expect((await asked).map((m) => m.visible.trim())).toEqual(paragraphs);
    expect(longestWaitMs).toBeLessThan(3_000);
  });

  it('streams a linked user’s answer as drafts, then keeps it, sharing the history with /chat', async () => {
    await stack.link('alice', 501);
    // /chat first: the Telegram answer must see it.
    stack.llm.enqueue(reply.text('Nice to meet you.'));
    const viaHttp = await readChat(
      await stack.parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'My favourite colour is teal.', user_id: 'alice' }),
      }),
    );
    expect(viaHttp.error).toBeUndefined();

    stack.llm.enqueue(
      reply.text('Your favourite colour is **teal**, and 2 < 3 & 4 > 1.', {
        chunks: 12,
        delayMs: 250,
      }),
    );
    const pushedAt = Date.now();
    const answer = await stack.ask(501, 'What is my favourite colour?');
    const request = stack.llm.chats.at(-1)?.body as ChatCompletionRequest;
    expect(seen(request)).toContain('My favourite colour is teal.');
    expect(seen(request)).toContain('Nice to meet you.');

    expect(answer).toHaveLength(1);
    const final = answer[0];
    expect(final?.visible).toBe('Your favourite colour is teal, and 2 < 3 & 4 > 1.');
    expect(final?.parseMode).toBe('HTML');
    expect(final?.text).toContain('<b>teal</b>');
    expect(final?.text).toContain('2 &lt; 3 &amp; 4 &gt; 1');
    expect(keyboardOf(final).map((b) => b.callback_data)).toEqual([
      expect.stringMatching(/^f:[0-9a-f-]{36}:1$/),
      expect.stringMatching(/^f:[0-9a-f-]{36}:0$/),
    ]);

    // Drafts grew before the final message, at most about one a second, never past it.
    const drafts = stack.telegram.drafts.filter((d) => d.chatId === '501' && d.at >= pushedAt);
    expect(drafts.length).toBeGreaterThanOrEqual(2);
    for (const [i, draft] of drafts.entries()) {
      expect(final?.visible.startsWith(draft.visible)).toBe(true);
      if (i > 0) expect(draft.at - (drafts[i - 1]?.at ?? 0)).toBeGreaterThanOrEqual(900);
    }
    // "typing…" came first.
    const typing = stack.telegram.callsOf('sendChatAction').filter((c) => c.at >= pushedAt);
    expect(typing[0]?.at).toBeLessThanOrEqual(drafts[0]?.at ?? 0);

    // And /chat sees what was said on Telegram.
    stack.llm.enqueue(reply.text('ok'));
    await readChat(
      await stack.parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'and now?', user_id: 'alice' }),
      }),
    );
    expect(seen(stack.llm.chats.at(-1)?.body as ChatCompletionRequest)).toContain(
      'What is my favourite colour?',
    );
    const sent = await stack.parley.waitForLog((l) => l.msg === 'Telegram answer sent');
    expect(sent.firstUpdateMs).toEqual(expect.any(Number));
  });

  it('lets a message sent while the previous answer streams wait its turn', async () => {
    await stack.link('nora', 514);
    stack.llm.enqueue(
      reply.text('First, slowly.', { chunks: 5, delayMs: 300 }),
      reply.text('Second.'),
    );
    const from = stack.telegram.sentTo('514').length;
    stack.telegram.pushMessage(514, 'one');
    stack.telegram.pushMessage(514, 'two');
    await stack.telegram.waitFor(
      () => stack.sentSince(514, from).filter((m) => m.replyMarkup !== undefined).length === 2,
    );
    expect(stack.sentSince(514, from).map((m) => m.visible)).toEqual(['First, slowly.', 'Second.']);
    const second = stack.llm.chats.at(-1)?.body as ChatCompletionRequest;
    expect(seen(second)).toContain('First, slowly.');
  });

  it('answers an unlinked chat only with how to link, once an hour, and ignores groups', async () => {
    const before = stack.llm.chats.length;
    stack.telegram.pushMessage(601, 'hello?');
    await stack.telegram.waitFor(() => stack.telegram.sentTo('601').length === 1);
    expect(stack.telegram.sentTo('601')[0]?.visible).toContain('/start <code>');
    stack.telegram.pushMessage(601, 'anyone?');
    stack.telegram.pushUpdateMessage(-700, { text: 'hi bot' }, { chatType: 'group' });
    const marker = stack.telegram.pushMessage(602, 'marker');
    await stack.telegram.waitFor(() => stack.telegram.sentTo('602').length === 1);
    await stack.parley.waitForLog((l) => l.updateId === marker - 1 || l.updateId === marker);
    await stack.parley.settled(500);
    expect(stack.telegram.sentTo('601')).toHaveLength(1);
    expect(stack.telegram.sentTo('-700')).toHaveLength(0);
    expect(stack.llm.chats.length).toBe(before);
  });

  it('/help, /new and /stop; voice, stickers and video are not supported yet; edits are not re-answered', async () => {
    await stack.link('bob', 502);
    const say = async (text: string) => {
      const from = stack.telegram.sentTo('502').length;
      stack.telegram.pushMessage(502, text);
      await stack.telegram.waitFor(() => stack.telegram.sentTo('502').length > from);
      return stack.telegram.sentTo('502')[from]?.visible;
    };
    expect(await say('/help')).toContain('/new');
    stack.llm.enqueue(reply.text('Noted.'));
    await stack.ask(502, 'Remember the code word: pineapple.');
    expect(await say('/new')).toContain('new conversation');
    stack.llm.enqueue(reply.text('I do not know.'));
    await stack.ask(502, 'What was the code word?');
    expect(seen(stack.llm.chats.at(-1)?.body as ChatCompletionRequest)).not.toContain('pineapple');

    const kinds = {
      sticker: { file_id: 'st1', file_unique_id: 's', width: 1, height: 1, type: 'regular' },
      voice: { file_id: 'vo1', file_unique_id: 'v', duration: 2 },
      video: { file_id: 'vi1', file_unique_id: 'w', width: 1, height: 1, duration: 2 },
    };
    for (const [kind, value] of Object.entries(kinds)) {
      const from = stack.telegram.sentTo('502').length;
      stack.telegram.pushUpdateMessage(502, { [kind]: value });
      await stack.telegram.waitFor(() => stack.telegram.sentTo('502').length > from);
      expect(stack.telegram.sentTo('502')[from]?.visible).toContain('not supported yet');
    }
    // An edit is not answered again: the user is told to send it anew, in their language.
    const beforeEdit = stack.llm.chats.length;
    const fromEdit = stack.telegram.sentTo('502').length;
    stack.telegram.pushEditedMessage(502, 'What was the code word, again?');
    stack.telegram.pushEditedMessage(502, '암호가 뭐였지?', 'ko');
    await stack.telegram.waitFor(() => stack.telegram.sentTo('502').length === fromEdit + 2);
    expect(stack.sentSince(502, fromEdit).map((m) => m.visible)).toEqual([
      'Edited messages are not answered again: send the corrected message as a new one.',
      '수정한 메시지에는 다시 답하지 않습니다. 고친 내용을 새 메시지로 보내 주세요.',
    ]);
    expect(stack.llm.chats.length).toBe(beforeEdit);

    expect(await say('/stop')).toContain('Unlinked');
    const chats = stack.llm.chats.length;
    expect(await say('still there?')).toContain('/start <code>');
    expect(stack.llm.chats.length).toBe(chats);
    const profile = await (await stack.parley.fetch('/users/bob/profile')).json();
    expect(profile).toMatchObject({ telegram_chat_id: null });
    // A new code links again.
    await stack.link('bob2', 502);
  });

  it('says in words when the user is over a limit', async () => {
    await stack.link('carol', 503);
    const limited = await stack.parley.fetch('/admin/users/carol', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ limits: { chats_per_minute: 1 } }),
    });
    expect(limited.status).toBe(200);
    stack.llm.enqueue(reply.text('First.'));
    await stack.ask(503, 'one');
    const chats = stack.llm.chats.length;
    const from = stack.telegram.sentTo('503').length;
    stack.telegram.pushMessage(503, 'two');
    await stack.telegram.waitFor(() => stack.telegram.sentTo('503').length > from);
    expect(stack.telegram.sentTo('503')[from]?.visible).toMatch(
      /^⏳ Too many chats: the limit is 1 a minute\. You can try again in \d+ seconds\.$/,
    );
    // A Telegram client set to Korean gets the reason in Korean too.
    const fromKo = stack.telegram.sentTo('503').length;
    stack.telegram.pushMessage(503, '세 번째', 'ko');
    await stack.telegram.waitFor(() => stack.telegram.sentTo('503').length > fromKo);
    expect(stack.telegram.sentTo('503')[fromKo]?.visible).toMatch(
      /^⏳ 대화가 너무 많습니다\. 1분에 1번까지 가능합니다\. \d+초 후 다시 시도할 수 있습니다\.$/,
    );
    expect(stack.llm.chats.length).toBe(chats);
  });

  it('delivers an answer with markup, <script>, & and 10,000 characters whole, in parts', async () => {
    await stack.link('dave', 504);
    const sentence = (i: number) =>
      `Sentence ${i} says a < b && c > d, <b>not bold</b> <script>x()</script>.`;
    let text = '## Report\n\nUse **this** & `that <tag>`.\n\n';
    for (let i = 0; text.length < 10_000; i++) {
      text += sentence(i) + (i % 5 === 4 ? '\n\n' : ' ');
    }
    stack.llm.enqueue(reply.text(text, { chunks: 40 }));
    const answer = await stack.ask(504, 'Write a long report.');
    expect(answer.length).toBeGreaterThanOrEqual(3);
    for (const part of answer) expect(part.visible.length).toBeLessThanOrEqual(4096);
    const visible = answer.map((m) => m.visible).join('\n\n');
    const expected = text
      .replace('## Report', 'Report')
      .replace('**this**', 'this')
      .replace('`that <tag>`', 'that <tag>');
    expect(norm(visible)).toBe(norm(expected));
    expect(answer.slice(0, -1).every((m) => m.replyMarkup === undefined)).toBe(true);
    expect(answer.at(-1)?.replyMarkup).toBeDefined();
  });

  // A `---` showed as a line of 10 characters: a part cut at 4,000 characters of Markdown with
  // one between every paragraph showed over 4,096, Telegram refused it ("message is too long")
  // and the answer was lost from that part on.
  it('delivers an answer with a thematic break between every item whole, each part within 4,096', async () => {
    await stack.link('rita', 530);
    const items = Array.from(
      { length: 40 },
      (_, i) => `Item ${i}: ${'lorem ipsum '.repeat(9)}end.`,
    );
    stack.llm.enqueue(reply.text(items.join('\n\n---\n\n'), { chunks: 20 }));
    const answer = await stack.ask(530, 'List forty things.');
    expect(answer.length).toBeGreaterThanOrEqual(2);
    for (const part of answer) {
      expect(part.parseMode).toBe('HTML');
      expect(part.visible.length).toBeLessThanOrEqual(4096);
    }
    const shown = answer.map((m) => m.visible).join('\n\n');
    expect(norm(shown)).toBe(norm(items.join('\n\n───\n\n')));
  });

  // Lines of `>&` are 3 characters of Markdown and 30 bytes of HTML: past the 32 KiB the Bot API
  // reads a text to ("text is too long"), and the answer was lost.
  it('sends a part whose HTML would pass the 32 KiB the Bot API reads as plain text', async () => {
    await stack.link('quinta', 531);
    const quoted = Array.from({ length: 1_300 }, () => '>&').join('\n');
    stack.llm.enqueue(reply.text(quoted, { chunks: 10 }));
    const answer = await stack.ask(531, 'Quote ampersands.');
    expect(answer.map((m) => [m.visible, m.parseMode])).toEqual([[quoted, undefined]]);
  });

  it('cuts an answer with nowhere to break between characters, never inside an emoji', async () => {
    await stack.link('emoji', 512);
    // 'a' first: every hard cut at 3,996 units would otherwise fall inside an emoji.
    const text = `a${'😀'.repeat(4_500)}`;
    stack.llm.enqueue(reply.text(text, { chunks: 20 }));
    const answer = await stack.ask(512, 'Only emoji, please.');
    expect(answer.length).toBeGreaterThanOrEqual(3);
    for (const part of answer) expect(part.visible.isWellFormed()).toBe(true);
    expect(answer.map((m) => m.visible).join('')).toBe(text);
  });

  it('loses no text and sends nothing twice through a 429 storm', async () => {
    await stack.link('erin', 505);
    let text = '';
    for (let i = 0; text.length < 6_000; i++) text += `Line ${i} of the storm answer.\n`;
    stack.llm.enqueue(reply.text(text, { chunks: 30, delayMs: 100 }));
    const from = stack.telegram.sentTo('505').length;
    stack.telegram.pushMessage(505, 'Tell me a long story.');
    await stack.telegram.waitFor(() => stack.telegram.drafts.some((d) => d.chatId === '505'));
    const stormAt = Date.now();
    stack.telegram.rateLimit(8, 1);
    const answer = await stack.answerAfter(505, from);
    expect(norm(answer.map((m) => m.visible).join('\n'))).toBe(norm(text));
    const lines = answer.flatMap((m) => m.visible.split('\n')).filter(Boolean);
    expect(new Set(lines).size).toBe(lines.length);
    const refused = stack.telegram.calls.filter((c) => c.status === 429);
    expect(refused.length).toBe(8);

    // Polling, refused while sending is paused, tries again once the pause (1 s) is over,
    // not only after the 5 s it waits after other errors: messages are not kept waiting.
    const pauses = () =>
      stack.parley.logs
        .filter((l) => l.msg === 'Telegram polling paused' && (l.time as number) >= stormAt)
        .map((l) => l.time as number);
    const polls = () => stack.telegram.callsOf('getUpdates').map((c) => c.at);
    expect(pauses().length).toBeGreaterThan(0); // a 5 s poll ends within an 8 s storm
    await stack.telegram.waitFor(() => polls().some((at) => at > Math.max(...pauses())));
    for (const paused of pauses()) {
      const next = Math.min(...[...polls(), ...pauses()].filter((at) => at > paused));
      expect(next - paused).toBeLessThan(2_500);
    }
  });

  // A draft of just "```" is `<pre></pre>`, which shows nothing: Telegram refused it with a 400,
  // and any 400 to a draft switched drafts off for every chat until Parley restarted.
  it('sends no draft until an answer opening with a code fence has code, and drafts stay on for everyone', async () => {
    await stack.link('cody', 532);
    await stack.link('dora', 533);
    const hold = holdAt((_chunk, written) => written === '```');
    const code = '```\nprint("hello")\nprint("world")\nprint("again")\n```';
    stack.llm.enqueue(reply.text(code, { pace: hold.pace, delayMs: 500 }));
    const from = stack.telegram.sentTo('532').length;
    stack.telegram.pushMessage(532, 'Print hello.');
    await hold.reached;
    // The answer so far is the fence alone, and stays so while Parley would show it.
    await stack.parley.settled(1_000);
    hold.release();
    const answer = await stack.answerAfter(532, from);
    expect(answer.map((m) => [m.visible, m.edits])).toEqual([
      ['print("hello")\nprint("world")\nprint("again")', []],
    ]);
    const drafts = stack.telegram.callsOf('sendMessageDraft');
    const codyDrafts = drafts.filter((c) => String(c.body.chat_id) === '532');
    expect(codyDrafts.map((c) => c.status)).not.toContain(400);
    expect(codyDrafts.length).toBeGreaterThan(0);

    // Another user's answer still grows as drafts, not as an edited message.
    stack.llm.enqueue(reply.text('One. Two. Three. Four. Five.', { chunks: 5, delayMs: 400 }));
    const other = await stack.ask(533, 'Count to five.');
    expect(other.map((m) => [m.visible, m.edits])).toEqual([['One. Two. Three. Four. Five.', []]]);
    expect(stack.telegram.drafts.filter((d) => d.chatId === '533').length).toBeGreaterThan(0);
  });

  it('streams by editing a message where drafts are refused', async () => {
    await stack.link('frank', 506);
    stack.telegram.draftsRefused = true;
    try {
      const text = 'One. Two. Three. Four. Five. Six. Seven. Eight.';
      stack.llm.enqueue(reply.text(text, { chunks: 8, delayMs: 400 }));
      const answer = await stack.ask(506, 'Count.');
      expect(answer).toHaveLength(1);
      expect(answer[0]?.visible).toBe(text);
      expect(answer[0]?.edits.length).toBeGreaterThanOrEqual(2);
      const edits = stack.telegram
        .callsOf('editMessageText')
        .filter((c) => String(c.body.chat_id) === '506' && c.status === 200);
      for (let i = 1; i < edits.length - 1; i++) {
        expect((edits[i]?.at ?? 0) - (edits[i - 1]?.at ?? 0)).toBeGreaterThanOrEqual(900);
      }
    } finally {
      stack.telegram.draftsRefused = false;
    }
  });

  it('records 👍 / 👎 on the answer’s run; a second press replaces it, here and in LangSmith', async () => {
    await stack.link('gina', 507);
    stack.llm.enqueue(reply.text('Rated answer.'));
    const [answer] = await stack.ask(507, 'Rate me.');
    const messageId = answer?.messageId ?? 0;
    const [up, down] = keyboardOf(answer).map((b) => b.callback_data);
    const runId = up?.split(':')[1];
    const shown = () => keyboardOf(stack.telegram.sentTo('507').at(-1)).map((b) => b.text);
    const press = async (data: string | undefined) => {
      const before = stack.telegram.callbackAnswers.length;
      stack.telegram.pushCallback(507, messageId, data ?? '');
      await stack.telegram.waitFor(() => stack.telegram.callbackAnswers.length > before);
      return stack.telegram.callbackAnswers.at(-1)?.text;
    };

    // The answer ran as a detached run (one mechanism with resumable /chat answers): its
    // owner can follow it again from the event log.
    const replay = await (await stack.parley.fetch(`/users/gina/runs/${runId}/events`)).text();
    const events = sseEvents(replay);
    expect(events[0]?.id).toBe(1);
    expect(textOf(events)).toBe('Rated answer.');
    expect(events.slice(-2).map((event) => event.data)).toEqual([
      JSON.stringify({ __done: true, run_id: runId }),
      '[DONE]',
    ]);

    expect(await press(up)).toBe('Thanks for the feedback.');
    const created = await stack.langsmith.waitForFeedback(
      (f) => f.run_id === runId && f.score === 1,
      10_000,
    );
    await stack.telegram.waitFor(() => shown()[0] === '👍 ✓');
    expect(shown()).toEqual(['👍 ✓', '👎']);

    expect(await press(down)).toBe('Thanks for the feedback.');
    await stack.telegram.waitFor(() => shown()[1] === '👎 ✓');
    expect(shown()).toEqual(['👍', '👎 ✓']);
    // LangSmith holds one feedback for the run, changed in place to the latest score.
    await stack.telegram.waitFor(() => created.score === 0, 10_000);
    expect(stack.langsmith.feedback.filter((f) => f.run_id === runId)).toEqual([
      expect.objectContaining({ id: created.id, key: 'user_score', score: 0 }),
    ]);
    expect(stack.langsmith.feedbackUpdates).toEqual([{ id: created.id, score: 0 }]);
    expect(stack.langsmith.duplicateCreates).toBe(0);
    // And so does Parley: the history shows the latest, the export one feedback.
    const history = (await (await stack.parley.fetch('/users/gina/history')).json()) as {
      turns: { run_id: string; feedback: { score: number } | null }[];
    };
    expect(history.turns.find((t) => t.run_id === runId)?.feedback).toMatchObject({ score: 0 });
    const exported = (await (await stack.parley.fetch('/users/gina/export')).json()) as {
      runs: { run_id: string; feedback: { score: number }[] }[];
    };
    expect(exported.runs.find((r) => r.run_id === runId)?.feedback).toEqual([
      expect.objectContaining({ key: 'user_score', score: 0 }),
    ]);

    // The chosen button again: Telegram says the keyboard is not modified, which is fine.
    expect(await press(down)).toBe('Thanks for the feedback.');
    await stack.telegram.waitFor(() =>
      stack.telegram
        .callsOf('editMessageReplyMarkup')
        .some((c) => c.status === 400 && String(c.body.chat_id) === '507'),
    );
    expect(shown()).toEqual(['👍', '👎 ✓']);
    expect(stack.parley.logs.some((l) => l.msg === 'choice not shown')).toBe(false);

    // Another chat cannot rate it.
    await stack.link('henry', 508);
    const before = stack.telegram.callbackAnswers.length;
    stack.telegram.pushCallback(508, messageId, up ?? '');
    await stack.telegram.waitFor(() => stack.telegram.callbackAnswers.length > before);
    expect(stack.telegram.callbackAnswers.at(-1)?.text).toBe('This answer can no longer be rated.');
  });

  it('ends with LangSmith holding the latest rating when it changed while a send was slow or failing', async () => {
    await stack.link('gail', 515);
    const { langsmith, telegram } = stack;
    const rateAnswer = async (text: string) => {
      stack.llm.enqueue(reply.text(text));
      const [answer] = await stack.ask(515, text);
      const [up, down] = keyboardOf(answer).map((b) => b.callback_data ?? '');
      const messageId = answer?.messageId ?? 0;
      return { runId: up?.split(':')[1], up: up ?? '', down: down ?? '', messageId };
    };
    const ofRun = (runId: string | undefined) =>
      langsmith.feedback.filter((f) => f.run_id === runId);

    // 👎 while the create of 👍 is still on its way: sent as an update once it is in.
    const slow = await rateAnswer('Slow.');
    langsmith.slowNext('feedback', 1_500);
    const sends = langsmith.requests.length;
    telegram.pushCallback(515, slow.messageId, slow.up);
    await telegram.waitFor(() =>
      langsmith.requests.slice(sends).some((r) => r.path === '/feedback'),
    );
    telegram.pushCallback(515, slow.messageId, slow.down);
    await telegram.waitFor(() => ofRun(slow.runId)[0]?.score === 0, 20_000);
    expect(ofRun(slow.runId)).toHaveLength(1);
    expect(langsmith.feedbackUpdates).toContainEqual({ id: ofRun(slow.runId)[0]?.id, score: 0 });

    // 👎 while every attempt to send 👍 fails: the retry sends the latest. The client retries
    // a 503 itself after 1-2 s, then 2-4 s; a 401 it does not retry, so its third attempt ends
    // the send, failed, as five 503s would 15-30 s later (test/http/langsmith.test.ts waits
    // those out); the outbox retries a 401 as it does a 503.
    const failing = await rateAnswer('Failing.');
    langsmith.failNext('feedback', 2, 503);
    langsmith.failNext('feedback', 1, 401);
    const before = langsmith.requests.length;
    const attempts = () => langsmith.requests.slice(before).filter((r) => r.path === '/feedback');
    const answers = telegram.callbackAnswers.length;
    telegram.pushCallback(515, failing.messageId, failing.up);
    await telegram.waitFor(() => attempts().length > 0);
    telegram.pushCallback(515, failing.messageId, failing.down);
    await telegram.waitFor(() => telegram.callbackAnswers.length === answers + 2);
    // 👎 was stored while that send was still under way: its last attempt had not been made.
    expect(attempts().length).toBeLessThan(3);
    await telegram.waitFor(() => ofRun(failing.runId).length > 0, 40_000);
    await stack.parley.settled(500);
    expect(ofRun(failing.runId)).toEqual([expect.objectContaining({ score: 0 })]);
    const history = (await (await stack.parley.fetch('/users/gail/history')).json()) as {
      turns: { run_id: string; feedback: { score: number } | null }[];
    };
    expect(history.turns.map((t) => t.feedback?.score)).toEqual([0, 0]);
  });

  it('shows a photo to the vision model, with the caption as the question', async () => {
    await stack.link('ivan', 509);
    const png = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      Buffer.from('a tiny fake png body'),
    ]);
    const small = stack.telegram.addFile(Buffer.from([0x89, 0x50, 0x4e, 0x47]), 'jpg');
    const large = stack.telegram.addFile(png, 'png');
    stack.llm.enqueue(
      reply.toolCalls([{ name: 'analyze_image', args: { question: 'What animal is this?' } }]),
      reply.text('It is a cat.'),
    );
    stack.vision.enqueue(reply.text('A cat on a sofa.'));
    const from = stack.telegram.sentTo('509').length;
    stack.telegram.pushUpdateMessage(509, {
      caption: 'What animal is this?',
      photo: [
        {
          file_id: small.fileId,
          file_unique_id: 's',
          width: 90,
          height: 90,
          file_size: small.size,
        },
        {
          file_id: large.fileId,
          file_unique_id: 'l',
          width: 800,
          height: 800,
          file_size: large.size,
        },
      ],
    });
    const answer = await stack.answerAfter(509, from);
    expect(answer.at(-1)?.visible).toBe('It is a cat.');
    const visionRequest = stack.vision.chats.at(-1)?.body as ChatCompletionRequest;
    expect(seen(visionRequest)).toContain(`data:image/png;base64,${png.toString('base64')}`);
    expect(seen(stack.llm.chats.at(-2)?.body as ChatCompletionRequest)).toContain(
      'What animal is this?',
    );
  });

  it('shows the model the photo with the most pixels when some sizes give no file_size', async () => {
    await stack.link('ines', 514);
    const fakePng = (body: string) =>
      Buffer.concat([
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
        Buffer.from(body),
      ]);
    // Telegram may leave file_size out of any size; its width and height are always there.
    // A thumbnail's pixels (90 × 90) outnumber the original's bytes here, so comparing the one
    // with the other would pick the thumbnail.
    const thumb = stack.telegram.addFile(fakePng('the 90 by 90 thumbnail'), 'jpg');
    const middle = stack.telegram.addFile(fakePng('the 320 by 320 size'), 'jpg');
    const original = fakePng('the 800 by 800 original');
    const large = stack.telegram.addFile(original, 'jpg');
    stack.llm.enqueue(
      reply.toolCalls([{ name: 'analyze_image', args: { question: 'What is written here?' } }]),
      reply.text('It says hello.'),
    );
    stack.vision.enqueue(reply.text('The word hello.'));
    const getFiles = stack.telegram.callsOf('getFile').length;
    const from = stack.telegram.sentTo('514').length;
    stack.telegram.pushUpdateMessage(514, {
      caption: 'What is written here?',
      photo: [
        { file_id: thumb.fileId, file_unique_id: 't', width: 90, height: 90 },
        { file_id: middle.fileId, file_unique_id: 'm', width: 320, height: 320 },
        {
          file_id: large.fileId,
          file_unique_id: 'o',
          width: 800,
          height: 800,
          file_size: large.size,
        },
      ],
    });
    const answer = await stack.answerAfter(514, from);
    expect(answer.at(-1)?.visible).toBe('It says hello.');
    expect(
      stack.telegram
        .callsOf('getFile')
        .slice(getFiles)
        .map((c) => c.body.file_id),
    ).toEqual([large.fileId]);
    const visionRequest = stack.vision.chats.at(-1)?.body as ChatCompletionRequest;
    expect(seen(visionRequest)).toContain(`data:image/png;base64,${original.toString('base64')}`);
  });

  it('reads the largest size of a photo within IMAGE_MAX_BYTES when the original is over it', async () => {
    await stack.link('olga', 515);
    const fakePng = (body: string) =>
      Buffer.concat([
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
        Buffer.from(body),
      ]);
    // Telegram sends every photo in several sizes: the original (here 30 MB, over the 10 MiB
    // default) was refused as "too large" though its 1280 × 1280 size fits.
    const middle = fakePng('the 1280 by 1280 size');
    const fitting = stack.telegram.addFile(middle, 'jpg');
    const original = stack.telegram.addFile(fakePng('the original'), 'jpg');
    stack.llm.enqueue(
      reply.toolCalls([{ name: 'analyze_image', args: { question: 'What is this?' } }]),
      reply.text('A lighthouse.'),
    );
    stack.vision.enqueue(reply.text('A lighthouse at dusk.'));
    const getFiles = stack.telegram.callsOf('getFile').length;
    const from = stack.telegram.sentTo('515').length;
    stack.telegram.pushUpdateMessage(515, {
      caption: 'What is this?',
      photo: [
        {
          file_id: fitting.fileId,
          file_unique_id: 'f',
          width: 1280,
          height: 1280,
          file_size: 2_000_000,
        },
        {
          file_id: original.fileId,
          file_unique_id: 'o',
          width: 4000,
          height: 4000,
          file_size: 30 * 1_048_576,
        },
      ],
    });
    const answer = await stack.answerAfter(515, from);
    expect(answer.at(-1)?.visible).toBe('A lighthouse.');
    expect(
      stack.telegram
        .callsOf('getFile')
        .slice(getFiles)
        .map((c) => c.body.file_id),
    ).toEqual([fitting.fileId]);
    const visionRequest = stack.vision.chats.at(-1)?.body as ChatCompletionRequest;
    expect(seen(visionRequest)).toContain(`data:image/png;base64,${middle.toString('base64')}`);
  });

  it('makes a PDF the user sends searchable by that user only', async () => {
    const judy = await stack.link('judy', 510);
    const kim = await stack.link('kim', 511);
    const pdf = Buffer.from(makePdf([{ text: ['The launch code is zebra-42.'] }]));
    const file = stack.telegram.addFile(pdf, 'pdf');
    const say = async (chatId: number, fields: Record<string, unknown>) => {
      const from = stack.telegram.sentTo(String(chatId)).length;
      stack.telegram.pushUpdateMessage(chatId, fields);
      await stack.telegram.waitFor(
        () => stack.telegram.sentTo(String(chatId)).length > from,
        60_000,
      );
      return stack.telegram.sentTo(String(chatId))[from]?.visible;
    };
    expect(
      await say(510, {
        document: {
          file_id: file.fileId,
          file_unique_id: 'd1',
          file_name: 'launch.pdf',
          mime_type: 'application/pdf',
          file_size: file.size,
        },
      }),
    ).toMatch(/^“launch\.pdf” is in your documents \(1 passage\)/);
    const sources = async (token: string) =>
      (
        (await (await stack.parley.fetch('/documents', { token })).json()) as {
          documents: string[];
        }
      ).documents;
    expect(await sources(judy)).toContain('launch.pdf');
    expect(await sources(kim)).not.toContain('launch.pdf');
    expect(await sources(TOKEN)).not.toContain('launch.pdf');

    // An encrypted PDF: the user is told to upload it with its password in the web client.
    const locked = stack.telegram.addFile(readFileSync(`${PDFS}/pr6531_1.pdf`), 'pdf');
    expect(
      await say(510, {
        document: { file_id: locked.fileId, file_unique_id: 'd3', file_name: 'locked.pdf' },
      }),
    ).toContain('protected by a password. Upload it with its password in the web client');
    expect(await sources(judy)).not.toContain('locked.pdf');

    // Past the Bot API's 20 MB download limit: refused before any download.
    const getFiles = stack.telegram.callsOf('getFile').length;
    expect(
      await say(510, {
        document: {
          file_id: 'too-big',
          file_unique_id: 'd2',
          file_name: 'huge.pdf',
          file_size: 30 * 1_048_576,
        },
      }),
    ).toContain('too large');
    expect(stack.telegram.callsOf('getFile')).toHaveLength(getFiles);
  });

  it('/new starts a conversation of this chat, keeping the others; /chats goes back to one', async () => {
    await stack.link('dana', 520);
    const say = async (text: string) => {
      const from = stack.telegram.sentTo('520').length;
      stack.telegram.pushMessage(520, text);
      await stack.telegram.waitFor(() => stack.telegram.sentTo('520').length > from);
      return stack.telegram.sentTo('520')[from];
    };
    stack.llm.enqueue(reply.text('Apples, then.'));
    await stack.ask(520, 'Topic one: apples');
    expect((await say('/new'))?.visible).toContain('/chats');
    stack.llm.enqueue(reply.text('Pears, then.'));
    await stack.ask(520, 'Topic two: pears');
    expect(seen(stack.llm.chats.at(-1)?.body as ChatCompletionRequest)).not.toContain('apples');

    // The web client's current conversation stayed where it was: Telegram keeps its own.
    stack.llm.enqueue(reply.text('ok'));
    const web = await stack.parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'from the web', user_id: 'dana' }),
    });
    await readChat(web);
    const webSeen = seen(stack.llm.chats.at(-1)?.body as ChatCompletionRequest);
    expect(webSeen).toContain('Topic one: apples');
    expect(webSeen).not.toContain('pears');

    const list = await say('/chats');
    expect(list?.visible).toBe(
      'Your latest conversations (tap one to continue it here):\n1. Topic one: apples\n2. Topic two: pears ✓',
    );
    const markup = list?.replyMarkup as
      | { inline_keyboard: { text: string; callback_data: string }[][] }
      | undefined;
    const buttons = (markup?.inline_keyboard ?? []).map((row) => row[0]);
    expect(buttons.map((b) => b?.text)).toEqual(['1. Topic one: apples', '2. Topic two: pears']);
    stack.telegram.pushCallback(520, list?.messageId ?? 0, buttons[0]?.callback_data ?? '');
    await stack.telegram.waitFor(() =>
      stack.telegram.callbackAnswers.some((a) => a.text === 'Continuing “Topic one: apples”.'),
    );
    stack.llm.enqueue(reply.text('Still apples.'));
    await stack.ask(520, 'And then?');
    const continued = seen(stack.llm.chats.at(-1)?.body as ChatCompletionRequest);
    expect(continued).toContain('Topic one: apples');
    expect(continued).toContain('from the web');
    expect(continued).not.toContain('pears');

    // Another user's conversation, or no conversation at all, is gone.
    const others = (await (await stack.parley.fetch('/users/alice/conversations')).json()) as {
      conversations: { id: string }[];
    };
    for (const forged of [`c:${others.conversations[0]?.id}`, 'c:not-an-id']) {
      const answered = stack.telegram.callbackAnswers.length;
      stack.telegram.pushCallback(520, list?.messageId ?? 0, forged);
      await stack.telegram.waitFor(() => stack.telegram.callbackAnswers.length > answered);
      expect(stack.telegram.callbackAnswers.at(-1)?.text, forged).toBe(
        'That conversation is gone.',
      );
    }
  });

  it('lists a conversation begun with nothing visible as untitled, not as a blank line', async () => {
    await stack.link('uma', 522);
    stack.llm.enqueue(reply.text('Hello?'));
    await stack.ask(522, '\u200b\u2060');
    const from = stack.telegram.sentTo('522').length;
    stack.telegram.pushMessage(522, '/chats');
    await stack.telegram.waitFor(() => stack.telegram.sentTo('522').length > from);
    expect(stack.telegram.sentTo('522')[from]?.visible).toContain('\n1. (untitled) ✓');
  });

  it('names an answer being written from Telegram in the conversation the web client opens', async () => {
    await stack.link('quinn', 521);
    const hold = holdAt((chunk) => chunk === 2);
    const text = 'The spare key is under the blue flower pot by the door.';
    stack.llm.enqueue(reply.text(text, { chunks: 6, pace: hold.pace }));
    const question = 'Where is the spare key?';
    const from = stack.telegram.sentTo('521').length;
    stack.telegram.pushMessage(521, question);
    await hold.reached;

    // This chat follows the user's shared conversation: the web client's current one.
    const listed = (await (await stack.parley.fetch('/users/quinn/conversations')).json()) as {
      conversations: { id: string; current: boolean }[];
    };
    const current = listed.conversations.find((c) => c.current);
    expect(current).toBeDefined();
    const open = async () =>
      (await (await stack.parley.fetch(`/users/quinn/conversations/${current?.id}`)).json()) as {
        turns: { run_id: string; answer: string }[];
        running: { run_id: string; question: string } | null;
      };
    const during = await open();
    expect(during.turns).toEqual([]);
    expect(during.running).toEqual({ run_id: expect.any(String), question });
    const runId = during.running?.run_id as string;

    // The web client follows it from there and sees the answer Telegram gets.
    const followed = await stack.parley.fetch(`/users/quinn/runs/${runId}/events`);
    expect(followed.status).toBe(200);
    hold.release();
    const [sent, raw] = await Promise.all([stack.answerAfter(521, from), followed.text()]);
    expect(textOf(sseEvents(raw))).toBe(text);
    expect(sent.at(-1)?.visible).toBe(text);
    await waitFor(async () => (await open()).running === null);
    expect((await open()).turns).toMatchObject([{ run_id: runId, answer: text }]);
  });

  it('says so when an answer is stopped from another door, instead of showing it as whole', async () => {
    await stack.link('stella', 523);
    const hold = holdAt((chunk) => chunk === 3);
    const text = 'First the flour, then the eggs, then the milk, then bake it for an hour.';
    stack.llm.enqueue(reply.text(text, { chunks: 8, pace: hold.pace }));
    const from = stack.telegram.sentTo('523').length;
    stack.telegram.pushMessage(523, 'How do I bake a cake?');
    await hold.reached;
    const listed = (await (await stack.parley.fetch('/users/stella/conversations')).json()) as {
      conversations: { id: string; current: boolean }[];
    };
    const current = listed.conversations.find((c) => c.current);
    const open = (await (
      await stack.parley.fetch(`/users/stella/conversations/${current?.id}`)
    ).json()) as { running: { run_id: string } | null };
    const runId = open.running?.run_id as string;
    // The web client's Stop, on the answer it sees being written.
    const stop = await stack.parley.fetch(`/users/stella/runs/${runId}/stop`, { method: 'POST' });
    expect(await stop.json()).toEqual({ run_id: runId, status: 'stopping' });
    hold.release();

    const sent = await stack.answerAfter(523, from);
    const final = sent.at(-1)?.visible ?? '';
    const [written = '', notice] = final.split('\n\n⏹ ');
    // What was written, then why it ends there; still rated (it is kept, as interrupted).
    expect(text.startsWith(written) && written.length < text.length, final).toBe(true);
    expect(notice).toBe(
      'Stopped before the end. What was written is above and kept in the conversation.',
    );
    expect(keyboardOf(sent.at(-1)).map((b) => b.callback_data)).toEqual([
      `f:${runId}:1`,
      `f:${runId}:0`,
    ]);
  });

  it('tells a Korean client why its answer broke off in Korean', async () => {
    await stack.link('kai', 524);
    // The model server drops the connection after the first words.
    stack.llm.enqueue(
      reply.text('서울의 날씨는 맑고 따뜻합니다', { chunks: 4, disconnectAfter: 3 }),
    );
    const from = stack.telegram.sentTo('524').length;
    stack.telegram.pushMessage(524, '서울 날씨 어때?', 'ko');
    const sent = await stack.answerAfter(524, from);
    const [written = '', warning] = (sent.at(-1)?.visible ?? '').split('\n\n⚠️ ');
    expect('서울의 날씨는 맑고 따뜻합니다'.startsWith(written)).toBe(true);
    expect(warning).toBe('모델 서버와의 연결이 끊겼거나 모델 서버에 연결할 수 없습니다.');
  });

  it('tells a client its answer broke off when the model server ended it with "abort"', async () => {
    await stack.link('abby', 526);
    // vLLM's end of a generation it aborted: every word sent, then finish_reason "abort".
    stack.llm.enqueue(
      reply.text('서울의 날씨는 맑고 따뜻합니다', { chunks: 4, finishReason: 'abort' }),
    );
    const from = stack.telegram.sentTo('526').length;
    stack.telegram.pushMessage(526, '서울 날씨 어때?', 'ko');
    const sent = await stack.answerAfter(526, from);
    const [written = '', warning] = (sent.at(-1)?.visible ?? '').split('\n\n⚠️ ');
    expect(written).toBe('서울의 날씨는 맑고 따뜻합니다');
    // A warning as a broken connection gets (above), not a finished answer; but it says the
    // server stopped, since the connection did not break.
    expect(warning).toBe('모델 서버가 답을 끝까지 쓰지 않고 멈췄습니다.');
  });

  it('says a message is over MESSAGE_MAX_CHARS instead of answering the first part of it', async () => {
    await stack.link('tess', 525);
    const before = stack.llm.chats.length;
    const from = stack.telegram.sentTo('525').length;
    const long = `${'word '.repeat(810)}and the question comes last: what is 2 + 2?`;
    expect(long.length).toBeLessThanOrEqual(4096);
    stack.telegram.pushMessage(525, long);
    await stack.telegram.waitFor(() => stack.telegram.sentTo('525').length > from);
    expect(stack.telegram.sentTo('525')[from]?.visible).toBe(
      'Your message is too long: at most 4000 characters. Send a shorter one.',
    );
    stack.telegram.pushMessage(525, '긴 메시지 '.repeat(700), 'ko');
    await stack.telegram.waitFor(() => stack.telegram.sentTo('525').length > from + 1);
    expect(stack.telegram.sentTo('525')[from + 1]?.visible).toBe(
      '메시지가 너무 깁니다. 최대 4000자입니다. 더 짧게 보내 주세요.',
    );
    // The model was asked nothing, and nothing went into the conversation.
    expect(stack.llm.chats.length).toBe(before);
    const history = (await (await stack.parley.fetch('/users/tess/history')).json()) as {
      turns: unknown[];
    };
    expect(history.turns).toEqual([]);
  });

  it('lists upcoming reminders with cancel buttons, and sets the command menu in two languages', async () => {
    await stack.link('lena', 512);
    stack.llm.enqueue(
      reply.toolCalls([
        { name: 'set_reminder', args: { title: 'Dentist', date: '2099-03-04', time: '15:30' } },
      ]),
      reply.text('Saved.'),
    );
    await stack.ask(512, 'Remind me of the dentist on 2099-03-04 at 15:30.');
    const from = stack.telegram.sentTo('512').length;
    stack.telegram.pushMessage(512, '/reminders');
    await stack.telegram.waitFor(() => stack.telegram.sentTo('512').length > from);
    const list = stack.telegram.sentTo('512')[from];
    expect(list?.visible).toBe('Upcoming reminders:\n1. 2099-03-04 15:30 — Dentist');
    const cancel = keyboardOf(list)[0]?.callback_data ?? '';
    stack.telegram.pushCallback(512, list?.messageId ?? 0, cancel);
    await stack.telegram.waitFor(() =>
      stack.telegram.callbackAnswers.some((a) => a.text === 'Reminder cancelled.'),
    );
    const left = await (await stack.parley.fetch('/reminders/lena')).json();
    expect(left).toMatchObject({ reminders: [] });
    // Button data is the client's to send: a forged one is answered, and names no reminder.
    const dashes = '-'.repeat(36); // the shape of an id, not an id
    for (const forged of [
      'r:not-a-reminder',
      'r:00000000-0000-4000-8000-000000000000',
      `r:${dashes}`,
      'f:x',
      `f:${dashes}:1`,
    ]) {
      const answered = stack.telegram.callbackAnswers.length;
      stack.telegram.pushCallback(512, list?.messageId ?? 0, forged);
      await stack.telegram.waitFor(() => stack.telegram.callbackAnswers.length > answered);
      expect(stack.telegram.callbackAnswers.at(-1)?.text, forged).toBe(
        forged.startsWith('r:')
          ? 'That reminder was already gone.'
          : 'This answer can no longer be rated.',
      );
    }

    expect(stack.telegram.commands.get('')?.map((c) => c.command)).toEqual([
      'new',
      'chats',
      'reminders',
      'help',
      'stop',
    ]);
    expect(stack.telegram.commands.get('ko')?.[0]).toEqual({
      command: 'new',
      description: '새 대화 시작',
    });
    // A Korean client is answered in Korean.
    stack.telegram.pushMessage(513, '안녕하세요', 'ko');
    await stack.telegram.waitFor(() => stack.telegram.sentTo('513').length === 1);
    expect(stack.telegram.sentTo('513')[0]?.visible).toMatch(/^이 채팅은 Parley 사용자와/);
  });

  // Twenty lines with titles of up to 200 characters pass the 4,096 characters of a message:
  // Telegram refused the list ("message is too long") and the user got nothing.
  it('lists twenty reminders with long titles in messages Telegram takes, each with its buttons', async () => {
    await stack.link('rhea', 534);
    const titles = Array.from({ length: 20 }, (_, i) =>
      `Reminder ${String(i + 1).padStart(2, '0')} `.padEnd(200, 'abcdefghij '.repeat(20)),
    );
    const date = (i: number) => `2099-01-${String(i + 1).padStart(2, '0')}`;
    // Ten a step: the most one answer of the model may run (TOOL_CALLS_PER_STEP).
    const set = (from: number) =>
      reply.toolCalls(
        titles
          .slice(from, from + 10)
          .map((title, i) => ({ name: 'set_reminder', args: { title, date: date(from + i) } })),
      );
    stack.llm.enqueue(set(0), set(10), reply.text('All twenty set.'));
    await stack.ask(534, 'Set my twenty reminders.');
    const from = stack.telegram.sentTo('534').length;
    stack.telegram.pushMessage(534, '/reminders');
    await stack.telegram.waitFor(() => stack.telegram.sentTo('534').length > from);
    await stack.parley.settled(500);
    const lists = stack.sentSince(534, from);
    expect(lists.length).toBeGreaterThanOrEqual(2);
    for (const list of lists) expect(list.visible.length).toBeLessThanOrEqual(4096);
    const lines = lists.flatMap((list) => list.visible.split('\n'));
    expect(lines).toEqual([
      'Upcoming reminders:',
      ...titles.map((title, i) => `${i + 1}. ${date(i)} — ${title}`),
    ]);
    // Each message's buttons cancel the reminders it lists.
    for (const list of lists) {
      const numbers = list.visible.split('\n').flatMap((line) => /^(\d+)\. /.exec(line)?.[1] ?? []);
      const rows = (list.replyMarkup as { inline_keyboard: { text: string }[][] }).inline_keyboard;
      expect(rows.map((row) => row[0]?.text)).toEqual(numbers.map((n) => `❌ Cancel ${n}`));
    }
  });
});

const keyboardOf = (message: SentMessage | undefined) =>
  (
    (message?.replyMarkup ?? { inline_keyboard: [] }) as {
      inline_keyboard: { text: string; callback_data: string }[][];
    }
  ).inline_keyboard[0] ?? [];

/** Whitespace runs as one space: parts are cut at paragraph or line breaks. */
const norm = (text: string) => text.replace(/\s+/g, ' ').trim();

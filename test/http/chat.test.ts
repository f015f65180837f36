import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChatStream,
  lockstep,
  readChat,
  readChatInLockstep,
  readUntil,
} from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { query } from '../support/seed.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const TOKEN = 'chat-test-token';

type Message = { role: string; content?: unknown; tool_call_id?: string };

describe.each(ENGINES)('POST /chat on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let dataDir: string;
  let parley: RunningParley;
  const env = () => ({
    ...setup.env,
    API_TOKEN: TOKEN,
    LLM_MODEL: 'fake-chat',
    LLM_CHUNK_TIMEOUT_MS: '2000',
    MESSAGE_MAX_CHARS: '2000',
    SSE_KEEPALIVE_MS: '300',
  });
  const chat = (body: Record<string, unknown>, signal?: AbortSignal) =>
    parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });
  const ask = async (body: Record<string, unknown>): Promise<ChatStream> =>
    readChat(await chat(body));
  /** Model requests the fake is still answering. */
  const modelCallsInFlight = () => llm.chats.filter((c) => c.outcome === 'pending').length;
  const sentMessages = (index: number) =>
    (llm.chats[index]?.body.messages ?? []).filter((m) => m.role !== 'system') as Message[];

  beforeAll(async () => {
    setup = await engineSetup(engine);
    ({ llm, dataDir } = setup);
    parley = await startParley({ dataDir, env: env() });
  });
  afterEach(() => {
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('streams Korean text as exact SSE bytes, then both end events', async () => {
    // Each chunk is written once the client has shown the previous one: chunks that arrive
    // together would be merged (tested below), which a busy machine could cause at any pace.
    const pacer = lockstep();
    llm.enqueue(reply.text('안녕하세요! 무엇을 도와드릴까요?', { chunks: 4, pace: pacer.pace }));
    const response = await chat({ message: '안녕', user_id: 'bytes' });

    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('x-accel-buffering')).toBe('no');
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/); // like every route
    const stream = await readChatInLockstep(response, pacer);
    expect(stream.fragments).toHaveLength(4);
    expect(stream.text).toBe('안녕하세요! 무엇을 도와드릴까요?');
    expect(stream.runId).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    const expected =
      stream.fragments.map((fragment) => `data: "${fragment}"\n\n`).join('') +
      `data: {"__done":true,"run_id":"${stream.runId}"}\n\n` +
      'data: [DONE]\n\n';
    // Keep-alive comments (ignored by clients, §6.5) may come first on a slow machine.
    expect(stream.raw.replaceAll(': ping\n\n', '')).toBe(expected);
    expect(stream.raw).not.toContain('\\u');
  });

  it('sends a paced answer token by token', async () => {
    const pacer = lockstep();
    llm.enqueue(reply.text('하나 둘 셋 넷', { pace: pacer.pace }));
    const stream = await readChatInLockstep(
      await chat({ message: 'count', user_id: 'paced' }),
      pacer,
    );
    expect(stream.fragments).toEqual(['하나', ' 둘', ' 셋', ' 넷']);
  });

  it('merges tokens that reach it together into fewer fragments, text unchanged', async () => {
    const words = Array.from({ length: 400 }, (_, i) => `단어${i}`);
    llm.enqueue(reply.text(words.join(' '))); // 400 chunks written at once: one burst
    const stream = await ask({ message: 'a long answer', user_id: 'burst' });
    expect(stream.text).toBe(words.join(' '));
    expect(stream.fragments.length).toBeLessThan(words.length / 4);
    expect(stream.runId).toBeDefined();
    expect(stream.ended).toBe(true);
    // And the history holds the whole answer as one message.
    llm.enqueue(reply.text('ok'));
    await ask({ message: 'next', user_id: 'burst' });
    expect(sentMessages(llm.chats.length - 1)).toEqual([
      { role: 'user', content: 'a long answer' },
      { role: 'assistant', content: words.join(' ') },
      { role: 'user', content: 'next' },
    ]);
  });

  it('sends the model a system prompt with the date, the history and the tools', async () => {
    llm.enqueue(reply.text('First answer'), reply.text('Second answer'));
    await ask({ message: 'first question', user_id: 'history' });
    await ask({ message: 'second question', user_id: 'history' });

    const request = llm.chats.at(-1)?.body;
    const system = request?.messages[0];
    expect(system?.role).toBe('system');
    expect(String(system?.content)).toContain(`The current date and time for the user is `);
    expect(String(system?.content)).toContain(new Date().toISOString().slice(0, 4));
    expect(request?.model).toBe('fake-chat');
    expect(request?.stream).toBe(true);
    expect(request?.tools?.map((t) => t.function.name).sort()).toEqual([
      'cancel_reminder',
      'create_automation',
      'list_automations',
      'list_reminders',
      'search_documents',
      'set_reminder',
      'update_profile',
    ]);
    expect(sentMessages(llm.chats.length - 1)).toEqual([
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'First answer' },
      { role: 'user', content: 'second question' },
    ]);
  });

  it('keeps users apart: one user never sees another one’s history', async () => {
    llm.enqueue(reply.text('to alice'), reply.text('to bob'));
    await ask({ message: 'alice speaks', user_id: 'alice' });
    await ask({ message: 'bob speaks', user_id: 'bob' });
    expect(sentMessages(llm.chats.length - 1)).toEqual([{ role: 'user', content: 'bob speaks' }]);
  });

  it('uses the user "default" when no user_id is given', async () => {
    llm.enqueue(reply.text('hello default'), reply.text('again'));
    const stream = await ask({ message: 'who am I?' });
    expect(stream.text).toBe('hello default');
    await ask({ message: 'and now?', user_id: 'default' });
    expect(sentMessages(llm.chats.length - 1)).toEqual([
      { role: 'user', content: 'who am I?' },
      { role: 'assistant', content: 'hello default' },
      { role: 'user', content: 'and now?' },
    ]);
    await parley.fetch('/reset', { method: 'POST' });
  });

  it.each([['reasoning_content'], ['reasoning'], ['think-tags']] as const)(
    'shows %s reasoning inside <think> only when show_thinking is true',
    async (format) => {
      llm.enqueue(
        reply.reasoning('Let me think about it.', 'The answer is 4.', { format }),
        reply.reasoning('Hidden thoughts.', 'Also 4.', { format }),
      );
      const shown = await ask({ message: '2+2?', user_id: `think-${format}`, show_thinking: true });
      expect(shown.fragments[0]).toBe('<think>');
      expect(shown.text).toMatch(
        /^<think>\s*Let me think about it\.\s*<\/think>The answer is 4\.$/,
      );
      expect(shown.runId).toBeDefined();

      const hidden = await ask({ message: '2+2 again?', user_id: `think-${format}` });
      expect(hidden.text).toBe('Also 4.');
      expect(hidden.raw).not.toContain('Hidden');

      // Reasoning is never stored: the history sent next time has only the answers.
      llm.enqueue(reply.text('ok'));
      await ask({ message: 'next', user_id: `think-${format}` });
      const sentBack = JSON.stringify(sentMessages(llm.chats.length - 1));
      expect(sentBack).toContain('The answer is 4.');
      expect(sentBack).not.toContain('Let me think');
      expect(sentBack).not.toContain('Hidden thoughts');
    },
  );

  it('ends with __error and the end events when the model server drops mid-stream', async () => {
    llm.enqueue(reply.text('one two three four five six', { chunks: 6, disconnectAfter: 3 }));
    const stream = await ask({ message: 'go', user_id: 'dropped' });
    expect(stream.text).toBe('one two th'); // the fake splits the text evenly by characters
    expect(stream.error).toEqual({
      code: 'model_unreachable',
      message: 'The model server closed the connection or could not be reached.',
    });
    expect(stream.runId).toBeDefined();
    expect(stream.ended).toBe(true);
    expect(stream.raw).not.toMatch(/at .*\.ts:\d+/); // no stack trace
    expect(
      stream.raw.endsWith(`data: {"__done":true,"run_id":"${stream.runId}"}\n\ndata: [DONE]\n\n`),
    ).toBe(true);
  });

  // Six text chunks, then the finish chunk (7), then `[DONE]`: a cut anywhere before the end
  // of the body, between events or inside one, in a burst or paced, must never look like a
  // complete answer.
  it.each(
    [0, 1, 3, 6, 7].flatMap((after) =>
      [0, 15].flatMap((delayMs) => [false, true].map((inside) => ({ after, delayMs, inside }))),
    ),
  )(
    'reports a model stream cut after $after chunks (pace $delayMs ms, inside an event: $inside)',
    async ({ after, delayMs, inside }) => {
      const full = 'one two three four five six';
      llm.enqueue(
        reply.text(full, { chunks: 6, disconnectAfter: after, cutInsideEvent: inside, delayMs }),
      );
      const stream = await ask({ message: 'go', user_id: `cut-${after}-${delayMs}-${inside}` });
      expect(stream.error?.code).toBe('model_unreachable');
      expect(stream.ended).toBe(true);
      expect(full.startsWith(stream.text)).toBe(true);
      if (after < 6) expect(stream.text.length).toBeLessThan(full.length);
    },
  );

  it('reports an upstream HTTP error as __error without leaking its body', async () => {
    llm.enqueue(reply.error(500, { message: 'secret upstream detail' }));
    const stream = await ask({ message: 'go', user_id: 'upstream-500' });
    expect(stream.error).toEqual({
      code: 'model_error',
      message: 'The model server answered with an error (HTTP 500).',
    });
    expect(stream.raw).not.toContain('secret upstream detail');
    expect(stream.ended).toBe(true);
  });

  it('reports a malformed upstream chunk as __error', async () => {
    llm.enqueue(reply.text('a b c d', { chunks: 4, malformedAfter: 1 }));
    const stream = await ask({ message: 'go', user_id: 'malformed' });
    expect(stream.text).toBe(''); // the first chunk only opens the assistant message
    expect(stream.error).toEqual({
      code: 'model_bad_response',
      message: 'The model server sent a response that could not be read.',
    });
    expect(stream.ended).toBe(true);
  });

  it.each([
    ['stops sending after its headers', reply.stall, 'stalled'],
    ['never answers, not even with headers', reply.silent, 'silent'],
  ])('times out a model that %s, and says so', async (_case, fault, userId) => {
    llm.enqueue(fault());
    const started = Date.now();
    const stream = await ask({ message: 'go', user_id: userId });
    expect(stream.error).toEqual({
      code: 'model_timeout',
      message: 'The model took too long to answer.',
    });
    expect(stream.ended).toBe(true);
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(1_900); // LLM_CHUNK_TIMEOUT_MS, not a quick failure
    expect(waited).toBeLessThan(10_000);
    expect(stream.raw).toContain(': ping\n\n'); // kept alive while waiting
  });

  it('keeps the question of a failed chat in the history', async () => {
    llm.enqueue(reply.error(503), reply.text('now it works'));
    await ask({ message: 'lost?', user_id: 'kept' });
    await ask({ message: 'again', user_id: 'kept' });
    expect(sentMessages(llm.chats.length - 1)).toEqual([
      { role: 'user', content: 'lost?' },
      { role: 'user', content: 'again' },
    ]);
  });

  it('aborts the upstream request when the client disconnects and keeps the partial answer', async () => {
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    llm.enqueue(reply.text(words, { chunks: 60, delayMs: 50 }));
    const controller = new AbortController();
    const response = await chat({ message: 'long story', user_id: 'leaver' }, controller.signal);
    await readUntil(response, (raw) => raw.includes('w3'));
    controller.abort();
    const closed = await llm.waitForClientClose(5_000);
    expect(closed.outcome).toBe('client-closed');

    llm.enqueue(reply.text('welcome back'));
    // The user's chats run one at a time: this one starts once the interrupted one is stored.
    expect((await ask({ message: 'back', user_id: 'leaver' })).text).toBe('welcome back');
    const history = sentMessages(llm.chats.length - 1);
    expect(history[0]).toEqual({ role: 'user', content: 'long story' });
    expect(history[1]?.role).toBe('assistant');
    const partial = String(history[1]?.content);
    expect(partial.startsWith('w0 w1 w2 w3')).toBe(true);
    expect(partial.length).toBeLessThan(words.length);
  });

  it('serialises 20 concurrent chats of one user into a consistent history', async () => {
    let peak = 0;
    llm.respond((request) => {
      peak = Math.max(peak, modelCallsInFlight());
      const last = request.messages.at(-1);
      return reply.text(`answer to ${String(last?.content)}`, { chunks: 3, delayMs: 2 });
    });
    const streams = await Promise.all(
      Array.from({ length: 20 }, (_, i) => ask({ message: `q${i}`, user_id: 'busy' })),
    );
    for (const [i, stream] of streams.entries()) {
      expect(stream.text).toBe(`answer to q${i}`);
      expect(stream.error).toBeUndefined();
    }
    llm.respond(() => undefined);
    llm.enqueue(reply.text('done'));
    await ask({ message: 'final', user_id: 'busy' });
    const history = sentMessages(llm.chats.length - 1);
    expect(history).toHaveLength(41);
    // Each question is followed by its own answer: no turn interleaved or lost.
    for (let i = 0; i < 40; i += 2) {
      const question = String(history[i]?.content);
      expect(history[i]?.role).toBe('user');
      expect(history[i + 1]).toEqual({ role: 'assistant', content: `answer to ${question}` });
    }
    expect(new Set(history.filter((m) => m.role === 'user').map((m) => m.content)).size).toBe(21);
    expect(peak).toBe(1); // never two model calls of this user at once
  });

  it('runs the chats of different users in parallel', async () => {
    let peak = 0;
    llm.respond(() => {
      peak = Math.max(peak, modelCallsInFlight());
      return reply.text('slow answer', { chunks: 3, delayMs: 300 });
    });
    const streams = await Promise.all(
      Array.from({ length: 8 }, (_, i) => ask({ message: 'hi', user_id: `parallel-user-${i}` })),
    );
    llm.respond(() => undefined);
    for (const stream of streams) expect(stream.text).toBe('slow answer');
    expect(peak).toBe(8);
  });

  it('runs no tool and calls the model no more once the client has left', async () => {
    llm.enqueue(
      reply.toolCalls([{ name: 'set_reminder', args: { title: 'Never', date: '2099-01-01' } }], {
        text: 'Let me save that for you.',
        delayMs: 150,
      }),
    );
    const before = llm.chats.length;
    const controller = new AbortController();
    const response = await chat(
      { message: 'remind me', user_id: 'left-before-tool' },
      controller.signal,
    );
    await readUntil(response, (raw) => raw.includes('Let'));
    controller.abort();
    expect((await llm.waitForClientClose(5_000)).outcome).toBe('client-closed');

    // The next chat of this user starts once the interrupted one is stored.
    llm.enqueue(reply.text('ok'));
    await ask({ message: 'still there?', user_id: 'left-before-tool' });
    expect(llm.chats.length - before).toBe(2); // the cut one and this one: no tool step
    const reminders = await (await parley.fetch('/reminders/left-before-tool')).json();
    expect(reminders).toEqual({ user_id: 'left-before-tool', reminders: [] });
  });

  it('never writes what users say, or what the model answers, to the info log', async () => {
    llm.enqueue(
      reply.reasoning('private-reasoning-91c2', 'private-answer-5e7d'),
      reply.toolCalls([
        { name: 'set_reminder', args: { title: 'private-title-3b8f', date: '2099-02-02' } },
      ]),
      reply.text('saved'),
    );
    const stream = await ask({ message: 'private-question-a4f0', user_id: 'quiet' });
    await ask({ message: 'private-question-2', user_id: 'quiet' });
    await parley.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run_id: stream.runId, score: 1, comment: 'private-comment-77aa' }),
    });
    const output = parley.output();
    expect(output).toContain('chat answered'); // the chats were logged, only without content
    for (const secret of [
      'private-question',
      'private-answer',
      'private-reasoning',
      'private-title',
      'private-comment',
    ]) {
      expect(output).not.toContain(secret);
    }
  });

  it('runs tools: a reminder set through the model shows up in GET /reminders', async () => {
    llm.enqueue(
      reply.toolCalls([{ name: 'set_reminder', args: { title: 'Dentist', date: '2099-03-04' } }]),
      reply.text('Saved your reminder.'),
    );
    const stream = await ask({
      message: 'remind me of the dentist on 2099-03-04',
      user_id: 'tools',
    });
    expect(stream.text).toBe('Saved your reminder.');
    const reminders = await (await parley.fetch('/reminders/tools')).json();
    expect(reminders).toMatchObject({
      reminders: [{ title: 'Dentist', date: '2099-03-04', notices_sent: [] }],
    });

    const toolMessage = sentMessages(llm.chats.length - 1).find((m) => m.role === 'tool');
    expect(String(toolMessage?.content)).toContain('Dentist');
  });

  it('remembers what the user tells about themselves in every later prompt', async () => {
    const systemPrompt = () => String(llm.chats.at(-1)?.body.messages[0]?.content);
    llm.enqueue(
      reply.toolCalls([
        {
          name: 'update_profile',
          args: {
            display_name: '지민',
            timezone: 'Asia/Seoul',
            facts: { allergy: 'peanuts', team: 'Parley' },
          },
        },
      ]),
      reply.text('알겠어요, 지민 님.'),
      reply.text('Hello again.'),
    );
    await ask({
      message: '저는 서울에 사는 지민이에요. 땅콩 알레르기가 있어요.',
      user_id: 'profile',
    });
    await ask({ message: 'hello', user_id: 'profile' });
    expect(systemPrompt()).toContain('(Asia/Seoul)');
    expect(systemPrompt()).toContain('- Name: 지민\n- allergy: peanuts\n- team: Parley');

    // A fact set to null is forgotten; a timezone the runtime does not know is refused.
    llm.enqueue(
      reply.toolCalls([{ name: 'update_profile', args: { facts: { allergy: null } } }]),
      reply.text('Forgotten.'),
      reply.toolCalls([{ name: 'update_profile', args: { timezone: 'Mars/Olympus' } }]),
      reply.text('That is not a timezone I know.'),
      reply.text('Hi.'),
    );
    await ask({ message: 'forget my allergy', user_id: 'profile' });
    await ask({ message: 'I moved to Mars', user_id: 'profile' });
    const toolMessage = sentMessages(llm.chats.length - 1).findLast((m) => m.role === 'tool');
    expect(JSON.stringify(toolMessage?.content)).toContain('is not an IANA timezone name');
    await ask({ message: 'hi', user_id: 'profile' });
    expect(systemPrompt()).toContain('(Asia/Seoul)');
    expect(systemPrompt()).toContain('- Name: 지민\n- team: Parley');
    expect(systemPrompt()).not.toContain('allergy');

    // Nobody else sees it.
    llm.enqueue(reply.text('Hi stranger.'));
    await ask({ message: 'hi', user_id: 'profile-other' });
    expect(systemPrompt()).not.toContain('지민');
    expect(systemPrompt()).toContain('(UTC)');
  });

  it('keeps at most 20 new facts a call and 50 in all, refusing the rest plainly', async () => {
    const facts = (from: number, count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`f${from + i}`, 'v']));
    const lastToolMessage = () =>
      JSON.stringify(sentMessages(llm.chats.length - 1).findLast((m) => m.role === 'tool'));
    const remember = async (count: number, from: number) => {
      llm.enqueue(
        reply.toolCalls([{ name: 'update_profile', args: { facts: facts(from, count) } }]),
        reply.text('noted'),
      );
      await ask({ message: 'remember these', user_id: 'many-facts' });
      return lastToolMessage();
    };
    expect(await remember(21, 1)).toContain('change at most 20 facts at a time');
    expect(await remember(20, 1)).not.toContain('error');
    expect(await remember(20, 21)).not.toContain('error');
    expect(await remember(11, 41)).toContain('That would keep 51 facts; at most 50 are kept.');

    llm.enqueue(reply.text('hi'));
    await ask({ message: 'hi', user_id: 'many-facts' });
    const prompt = String(llm.chats.at(-1)?.body.messages[0]?.content);
    expect(prompt.match(/^- f\d+: v$/gm)).toHaveLength(40); // the refused call stored nothing
    expect(prompt).not.toContain('- f41:');
  });

  it('runs parallel tool calls whose arguments arrive split across deltas', async () => {
    llm.enqueue(
      reply.toolCalls(
        [
          { name: 'set_reminder', args: { title: '생일 파티', date: '2099-05-01' } },
          { name: 'set_reminder', args: { title: 'Flight', date: '2099-05-03' } },
        ],
        { argChunks: 5 },
      ),
      reply.text('Both saved.'),
    );
    const stream = await ask({ message: 'two reminders please', user_id: 'parallel' });
    expect(stream.text).toBe('Both saved.');
    const body = (await (await parley.fetch('/reminders/parallel')).json()) as {
      reminders: { title: string }[];
    };
    expect(body.reminders.map((r) => r.title)).toEqual(['생일 파티', 'Flight']);
    expect(sentMessages(llm.chats.length - 1).filter((m) => m.role === 'tool')).toHaveLength(2);
  });

  it('runs at most ten tool calls of one step, telling the model why the rest did not run', async () => {
    const calls = Array.from({ length: 13 }, (_, i) => ({
      name: 'set_reminder',
      args: { title: `Call ${i}`, date: '2099-06-01' },
    }));
    llm.enqueue(reply.toolCalls(calls), reply.text('Ten saved.'));
    const stream = await ask({ message: 'thirteen reminders', user_id: 'many-calls' });
    expect(stream.text).toBe('Ten saved.');
    const body = (await (await parley.fetch('/reminders/many-calls')).json()) as {
      reminders: { title: string }[];
    };
    // The ten run at once: stored in any order.
    expect(body.reminders.map((r) => r.title).sort()).toEqual(
      calls
        .slice(0, 10)
        .map((c) => c.args.title)
        .sort(),
    );
    const results = sentMessages(llm.chats.length - 1).filter((m) => m.role === 'tool');
    expect(results).toHaveLength(13);
    const refused = results.filter((m) => String(m.content).includes('At most 10 tool calls'));
    expect(refused).toHaveLength(3);
  });

  it('reports a failing tool to the model as a tool error and carries on', async () => {
    llm.enqueue(
      reply.toolCalls([{ name: 'set_reminder', args: { title: 'Past', date: '2001-01-01' } }]),
      reply.text('That date has passed.'),
    );
    const stream = await ask({ message: 'remind me in 2001', user_id: 'tool-error' });
    expect(stream.error).toBeUndefined();
    expect(stream.text).toBe('That date has passed.');
    const toolMessage = sentMessages(llm.chats.length - 1).find((m) => m.role === 'tool');
    expect(String(toolMessage?.content)).toContain('is in the past');
  });

  it('replays a recorded provider stream (OpenAI-compatible server)', async () => {
    llm.enqueue(reply.replay('openai-compatible__openai-compatible-text.chunks.txt'));
    const stream = await ask({ message: 'hi', user_id: 'replay' });
    expect(stream.text).toBe('Grok'); // the recording's two content deltas
    expect(stream.error).toBeUndefined();
    expect(stream.ended).toBe(true);
  });

  it('names the run in X-Parley-Run-Id from the start, so a stopped answer can be rated', async () => {
    llm.enqueue(reply.text('s0 s1 s2 s3 s4 s5 s6 s7 s8 s9', { chunks: 10, delayMs: 100 }));
    const controller = new AbortController();
    const response = await chat({ message: 'stop me', user_id: 'stopper' }, controller.signal);
    const runId = response.headers.get('x-parley-run-id') ?? '';
    expect(runId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    await readUntil(response, (raw) => raw.includes('s1'));
    controller.abort();
    await llm.waitForClientClose(5_000);
    const stored = async () => {
      const history = await parley.fetch('/users/stopper/history?limit=1');
      return ((await history.json()) as { turns: Array<{ run_id: string; interrupted: boolean }> })
        .turns[0];
    };
    await expect.poll(stored, { timeout: 10_000 }).toMatchObject({ interrupted: true });
    expect((await stored())?.run_id).toBe(runId);
    const rated = await parley.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run_id: runId, score: 0 }),
    });
    expect(rated.status).toBe(200);
  });

  it('links feedback to the run id from the end event', async () => {
    llm.enqueue(reply.text('rate me'));
    const stream = await ask({ message: 'hi', user_id: 'rater' });
    const response = await parley.fetch('/feedback', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run_id: stream.runId, score: 1, comment: 'great' }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      ok: true,
      feedback_id: expect.stringMatching(
        /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
      ),
    });
  });

  it('clears stored history on reset', async () => {
    llm.enqueue(reply.text('one'), reply.text('two'));
    await ask({ message: 'remember this', user_id: 'forgetful' });
    const reset = await parley.fetch('/reset?user_id=forgetful', { method: 'POST' });
    expect(await reset.json()).toEqual({ reset: true, user_id: 'forgetful' });
    await ask({ message: 'what did I say?', user_id: 'forgetful' });
    expect(sentMessages(llm.chats.length - 1)).toEqual([
      { role: 'user', content: 'what did I say?' },
    ]);
  });

  it.each([
    ['an empty message', { message: '' }, ['body', 'message']],
    ['a message over MESSAGE_MAX_CHARS', { message: 'x'.repeat(2001) }, ['body', 'message']],
    ['a missing message', { user_id: 'x' }, ['body', 'message']],
    [
      'show_thinking that is not a boolean',
      { message: 'hi', show_thinking: 'yes' },
      ['body', 'show_thinking'],
    ],
    [
      'an image that is not base64',
      { message: 'hi', image_base64: 'not base64!' },
      ['body', 'image_base64'],
    ],
    ['an empty user_id', { message: 'hi', user_id: '' }, ['body', 'user_id']],
    [
      'a user_id over 128 characters',
      { message: 'hi', user_id: 'u'.repeat(129) },
      ['body', 'user_id'],
    ],
  ])('answers 422 before any stream for %s', async (_case, body, loc) => {
    const response = await chat(body);
    expect(response.status).toBe(422);
    expect(response.headers.get('content-type')).toContain('application/json');
    const { detail } = (await response.json()) as { detail: { loc: string[] }[] };
    expect(detail.map((item) => item.loc)).toEqual([loc]);
  });

  it('accepts a message of exactly MESSAGE_MAX_CHARS and ignores unknown fields', async () => {
    llm.enqueue(reply.text('read it all'));
    const message = 'x'.repeat(2000);
    const stream = await ask({ message, user_id: 'at-the-limit', mood: 'curious' });
    expect(stream.text).toBe('read it all');
    expect(sentMessages(llm.chats.length - 1)).toEqual([{ role: 'user', content: message }]);
  });

  it('records each run with its status, usage and tools, and keeps history across a restart', async () => {
    llm.enqueue(reply.text('remember me', { usage: { prompt: 42, completion: 7 } }));
    const stream = await ask({ message: 'persist', user_id: 'restart' });
    llm.enqueue(
      reply.toolCalls([{ name: 'set_reminder', args: { title: 'Run', date: '2099-06-01' } }]),
      reply.text('Saved.'),
    );
    await ask({ message: 'remind me', user_id: 'restart-tools' });
    llm.enqueue(reply.text('a b c d e f g h', { chunks: 8, delayMs: 100 }));
    const controller = new AbortController();
    const cut = await chat({ message: 'long', user_id: 'restart-leaver' }, controller.signal);
    await readUntil(cut, (raw) => raw.includes('a'));
    controller.abort();
    await llm.waitForClientClose(5_000);
    llm.enqueue(reply.text('back'));
    await ask({ message: 'back', user_id: 'restart-leaver' }); // runs once the cut one is stored
    expect(await parley.stop()).toBe(0);

    const target = { dataDir, databaseUrl: setup.env.DATABASE_URL };
    const [run] = await query<Record<string, unknown>>(
      target,
      'SELECT user_id, status, model, input_tokens, output_tokens, tools_used, finished_at FROM chat_runs WHERE id = $1',
      [stream.runId],
    );
    expect(run).toMatchObject({
      user_id: 'restart',
      status: 'completed',
      model: 'openai-compatible:fake-chat',
      input_tokens: 42,
      output_tokens: 7,
      tools_used: [],
    });
    expect(run?.finished_at).toBeInstanceOf(Date);
    const [toolRun] = await query<{ tools_used: string[] }>(
      target,
      "SELECT r.tools_used FROM chat_runs r WHERE r.user_id = 'restart-tools'",
    );
    expect(toolRun?.tools_used).toEqual(['set_reminder']);
    const [interrupted] = await query<{ status: string }>(
      target,
      "SELECT status FROM chat_runs WHERE user_id = 'restart-leaver' ORDER BY started_at LIMIT 1",
    );
    expect(interrupted?.status).toBe('interrupted');

    parley = await startParley({ dataDir, env: env() });
    llm.enqueue(reply.text('I remember'));
    await ask({ message: 'do you remember?', user_id: 'restart' });
    expect(sentMessages(llm.chats.length - 1)).toEqual([
      { role: 'user', content: 'persist' },
      { role: 'assistant', content: 'remember me' },
      { role: 'user', content: 'do you remember?' },
    ]);
  });
});

describe('POST /chat without a model', () => {
  it('answers with a clear error event and keeps every other endpoint working', async () => {
    const parley = await startParley({ env: { LLM_MODEL_PATH: '/nonexistent/model.gguf' } });
    try {
      const response = await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hello' }),
      });
      expect(response.status).toBe(200);
      const stream = await readChat(response);
      expect(stream.error).toEqual({
        code: 'model_not_configured',
        message:
          'LLM_MODEL_PATH is /nonexistent/model.gguf, which does not exist. Point it at a GGUF ' +
          'file, or set LLM_BASE_URL to an OpenAI-compatible server.',
      });
      expect(stream.ended).toBe(true);
      expect((await parley.fetch('/health')).status).toBe(200);
      expect((await parley.fetch('/documents')).status).toBe(200);
    } finally {
      await parley.stop();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChatStack,
  type EngineStack,
  startChatStack,
  startEngineStack,
} from '../support/chat-stack.ts';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

describe.each([
  ['with the verbosity flags on', { LANGGRAPH_VERBOSE: '1', THINK_VERBOSE: 'yes' }, true],
  ['with the verbosity flags off', {}, false],
])('the agent loop %s', (_case, flags, verbose) => {
  let stack: ChatStack;
  let llm: FakeLlmServer;
  let parley: RunningParley;

  beforeAll(async () => {
    stack = await startChatStack({ CHAT_MAX_STEPS: '3', ...flags });
    ({ llm, parley } = stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const ask = async (message: string, extra: Record<string, unknown> = {}) =>
    readChat(await stack.chat({ message, user_id: 'looper', ...extra }));

  it('answers with the stream headers at once, before the model says anything', async () => {
    // No keep-alive comes before 15 s here, so only the headers themselves can arrive early.
    llm.enqueue(reply.text('late', { delayMs: 900 }));
    const started = Date.now();
    const response = await stack.chat({ message: 'slow model', user_id: 'headers-first' });
    expect(Date.now() - started).toBeLessThan(600);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect((await readChat(response)).text).toBe('late');
  });

  it('stops after CHAT_MAX_STEPS model calls and still ends the stream cleanly', async () => {
    const before = llm.chats.length;
    llm.respond(() => reply.toolCalls([{ name: 'list_reminders', args: {} }]));
    const stream = await ask('loop forever');
    llm.respond(() => undefined);
    expect(llm.chats.length - before).toBe(3);
    expect(stream.error).toBeUndefined();
    expect(stream.runId).toBeDefined();
    expect(stream.ended).toBe(true);
    llm.assertNoUnexpected();
  });

  it(`${verbose ? 'logs' : 'does not log'} agent steps and reasoning`, async () => {
    llm.enqueue(
      reply.toolCalls([{ name: 'set_reminder', args: { title: 'x', date: '2000-01-01' } }]),
      reply.reasoning('secret musings', 'fine'),
    );
    const { runId } = await ask('think', { show_thinking: false });
    // Every line of this chat is logged before its last event is sent, but travels another pipe.
    await parley.waitForLog((line) => line.msg === 'chat answered' && line.runId === runId);
    const messages = parley.logs.map((line) => line.msg);
    expect(messages.includes('agent step')).toBe(verbose);
    expect(messages.includes('tool finished')).toBe(verbose);
    expect(parley.output().includes('secret musings')).toBe(verbose);
    // A failed tool's reason is what the verbose log is for.
    const failedTool = parley.logs.find((line) => line.msg === 'tool finished' && line.failed);
    expect(String(failedTool?.toolError ?? '')).toMatch(verbose ? /past/ : /^$/);
  });
});

describe.each(['0', '1'])('model failures with LLM_MAX_RETRIES=%s', (retries) => {
  let llm: FakeLlmServer;
  let closedPort: number;
  const parleys: RunningParley[] = [];

  beforeAll(async () => {
    llm = await startFakeLlmServer();
    const probe = await startFakeLlmServer(); // a port that was open a moment ago, now refused
    closedPort = Number(new URL(probe.url).port);
    await probe.close();
  });
  afterAll(async () => {
    await Promise.all(parleys.map((parley) => parley.stop()));
    await llm?.close();
  });

  const askVia = async (baseUrl: string) => {
    const parley = await startParley({ env: { LLM_BASE_URL: baseUrl, LLM_MAX_RETRIES: retries } });
    parleys.push(parley);
    return readChat(
      await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hello', user_id: `retries-${retries}` }),
      }),
    );
  };

  it('says the model server could not be reached when it refuses the connection', async () => {
    const stream = await askVia(`http://127.0.0.1:${closedPort}/v1`);
    expect(stream.error).toEqual({
      code: 'model_unreachable',
      message: 'The model server closed the connection or could not be reached.',
    });
    expect(stream.ended).toBe(true);
  });

  it('names the HTTP status when the model server keeps answering with an error', async () => {
    for (let i = 0; i <= Number(retries); i++) llm.enqueue(reply.error(500));
    const stream = await askVia(llm.url);
    expect(stream.error).toEqual({
      code: 'model_error',
      message: 'The model server answered with an error (HTTP 500).',
    });
    expect(stream.ended).toBe(true);
    llm.assertNoUnexpected();
  });
});

describe.each(ENGINES)('a retried model call on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley | undefined;
  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('does not count the wait before a retry against LLM_CHUNK_TIMEOUT_MS', async () => {
    // The SDK waits ~2 s before its first retry; the chunk limit is 1 s.
    llm.enqueue(reply.error(503), reply.text('answered on the retry'));
    parley = await startParley({
      dataDir: setup.dataDir,
      // One retry here, where the helper's environment has none.
      env: { ...setup.env, LLM_MAX_RETRIES: '1', LLM_CHUNK_TIMEOUT_MS: '1000' },
    });
    const stream = await readChat(
      await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'hello', user_id: 'retry-wait' }),
      }),
    );
    expect(stream.error).toBeUndefined();
    expect(stream.text).toBe('answered on the retry');
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
  });
});

describe.each(ENGINES)('the history sent to the model on the %s engine', (engine) => {
  let stack: EngineStack;
  beforeAll(async () => {
    // A turn below is ~210 estimated tokens (100 Hangul characters each way): two fit.
    stack = await startEngineStack(engine, { HISTORY_MAX_TOKENS: '500' });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('holds the latest whole turns within HISTORY_MAX_TOKENS; all of them stay stored', async () => {
    const question = (i: number) => `${'질'.repeat(99)}${i}`;
    const answer = (i: number) => `${'답'.repeat(99)}${i}`;
    for (let i = 1; i <= 5; i++) {
      stack.llm.enqueue(reply.text(answer(i)));
      expect((await stack.chat('long-talk', question(i))).text).toBe(answer(i));
    }
    const sent = stack.llm.chats.at(-1)?.body.messages.filter((m) => m.role !== 'system');
    expect(sent).toEqual([
      { role: 'user', content: question(3) },
      { role: 'assistant', content: answer(3) },
      { role: 'user', content: question(4) },
      { role: 'assistant', content: answer(4) },
      { role: 'user', content: question(5) },
    ]);
    // What the user reads back: every turn, whole, newest first.
    const page = (await (await stack.parley.fetch('/users/long-talk/history')).json()) as {
      turns: { question: string; answer: string }[];
    };
    expect(page.turns.map((turn) => [turn.question, turn.answer])).toEqual(
      [5, 4, 3, 2, 1].map((i) => [question(i), answer(i)]),
    );
  });
});

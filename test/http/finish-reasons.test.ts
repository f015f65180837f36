import OpenAI, { type APIError } from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, type Reply, reply } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const TOKEN = 'finish-reasons-token';
const CUT = {
  code: 'model_stopped',
  message: 'The model server stopped the answer before its end.',
};

type Turn = { question: string; answer: string; interrupted: boolean; status: string | null };

/**
 * A model server that gives up on an answer says so in its finish reason (vLLM: `abort` on
 * engine shutdown, preemption or its own client gone; others `error`, `cancelled`): the SDK's
 * provider reads every reason it does not know as `other`, so such an answer looked whole.
 * It must look exactly like an answer whose connection broke (test/http/chat.test.ts), in
 * every door; a reason Parley does not know but that means no harm (`eos`) stays a normal end.
 */
describe.each(ENGINES)('finish reasons a model server sends, on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;
  const ask = async (message: string, userId: string) =>
    readChat(
      await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message, user_id: userId }),
      }),
    );
  const lastTurn = async (userId: string): Promise<Turn | undefined> => {
    const page = (await (await parley.fetch(`/users/${userId}/history`)).json()) as {
      turns: Turn[];
    };
    return page.turns[0];
  };
  const openai = () => new OpenAI({ baseURL: `${parley.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
  /** What the OpenAI SDK shows of a streamed completion: its text, finish reason, or error. */
  const streamed = async (user: string) => {
    const stream = await openai().chat.completions.create({
      model: 'parley',
      messages: [{ role: 'user', content: 'Tell me.' }],
      stream: true,
      user,
    });
    let content = '';
    let finish: string | null = null;
    const error = await (async () => {
      for await (const chunk of stream) {
        content += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
    })().catch((e: unknown) => e);
    return { content, finish, error };
  };
  const notStreamed = (user: string) =>
    openai()
      .chat.completions.create({
        model: 'parley',
        messages: [{ role: 'user', content: 'Tell me.' }],
        user,
      })
      .catch((e: unknown) => e);

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    parley = await startParley({
      dataDir: setup.dataDir,
      env: { ...setup.env, API_TOKEN: TOKEN, LLM_MODEL: 'fake-chat', LLM_CHUNK_TIMEOUT_MS: '2000' },
    });
  }, 120_000);
  afterEach(() => {
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  /** Five words, then the end chunk with this finish reason, as vLLM streams an aborted one. */
  const abortedText = (finishReason: string): Reply =>
    reply.text('one two three four five', { chunks: 5, finishReason });

  it.each(['abort', 'error', 'cancelled', 'canceled', 'ABORT', 'Cancelled'])(
    'shows /chat an answer ended with %j as cut, and stores it as a cut one',
    async (reason) => {
      const user = `chat-${reason}`;
      llm.enqueue(abortedText(reason));
      const stream = await ask('go', user);
      expect(stream.text).toBe('one two three four five');
      expect(stream.error).toEqual(CUT);
      expect(stream.ended).toBe(true);
      expect(
        stream.raw.endsWith(
          `data: ${JSON.stringify({ __error: CUT })}\n\n` +
            `data: {"__done":true,"run_id":"${stream.runId}"}\n\ndata: [DONE]\n\n`,
        ),
      ).toBe(true);

      // Marked as the answer of a broken connection is: kept as written, the run failed; but
      // the user is told the server stopped it, not that the connection broke.
      const aborted = await lastTurn(user);
      llm.enqueue(reply.text('one two three four five', { chunks: 5, disconnectAfter: 4 }));
      expect((await ask('again', user)).error).toEqual({
        code: 'model_unreachable',
        message: 'The model server closed the connection or could not be reached.',
      });
      const broken = await lastTurn(user);
      expect(aborted).toMatchObject({
        question: 'go',
        answer: 'one two three four five',
        interrupted: broken?.interrupted,
        status: broken?.status,
      });
      expect(broken?.status).toBe('failed');

      // The reason is in the log as a code, beside the code the client was told.
      const failed = await parley.waitForLog(
        (line) => line.msg === 'chat failed' && line.userId === user,
      );
      expect(failed).toMatchObject({
        code: 'model_stopped',
        err: { type: 'ModelAnswerCutError', code: reason.toLowerCase() },
      });
    },
  );

  it('shows /chat an answer cut right after a tool call as cut, and asks the model nothing more', async () => {
    const before = llm.chats.length;
    llm.enqueue(
      reply.toolCalls([{ name: 'list_reminders', args: {} }], {
        text: 'Let me look.',
        finishReason: 'abort',
      }),
    );
    const stream = await ask('my reminders?', 'tool-abort');
    expect(stream.text).toBe('Let me look.');
    expect(stream.error).toEqual(CUT);
    expect(stream.ended).toBe(true);
    // Not answered from the tool's result, as if the call had been whole.
    expect(llm.chats.length - before).toBe(1);
    expect(await lastTurn('tool-abort')).toMatchObject({
      question: 'my reminders?',
      answer: 'Let me look.',
      status: 'failed',
    });
  });

  it('gives the OpenAI SDK the error of a cut upstream, never finish_reason stop, streamed', async () => {
    llm.enqueue(abortedText('abort'));
    const text = await streamed('door-text');
    expect(text.content).toBe('one two three four five');
    expect(text.finish).toBeNull();
    expect(text.error).toBeInstanceOf(OpenAI.APIError);
    expect((text.error as APIError).code).toBe('model_stopped');

    llm.enqueue(
      reply.toolCalls([{ name: 'list_reminders', args: {} }], {
        text: 'Let me look.',
        finishReason: 'abort',
      }),
    );
    const tool = await streamed('door-tool');
    expect(tool.content).toBe('Let me look.');
    expect(tool.finish).toBeNull();
    expect((tool.error as APIError).code).toBe('model_stopped');
  });

  it('gives the OpenAI SDK the error of a cut upstream, never finish_reason stop, not streamed', async () => {
    // What a broken connection gets, for comparison.
    llm.enqueue(reply.text('one two three four five', { chunks: 5, disconnectAfter: 4 }));
    const broken = (await notStreamed('whole-cut')) as APIError;
    expect(broken).toBeInstanceOf(OpenAI.APIError);

    llm.enqueue(abortedText('abort'));
    const text = (await notStreamed('whole-text')) as APIError;
    expect(text).toBeInstanceOf(OpenAI.APIError);
    // The same status (the SDKs retry it), its own code and words.
    expect({ status: text.status, error: text.error }).toEqual({
      status: broken.status,
      error: { ...(broken.error as object), code: 'model_stopped', message: CUT.message },
    });

    llm.enqueue(
      reply.toolCalls([{ name: 'list_reminders', args: {} }], {
        text: 'Let me look.',
        finishReason: 'error',
      }),
    );
    const tool = (await notStreamed('whole-tool')) as APIError;
    expect({ status: tool.status, error: tool.error }).toEqual({
      status: broken.status,
      error: { ...(broken.error as object), code: 'model_stopped', message: CUT.message },
    });
  });

  it('ends normally on a reason it does not know but that means no harm, and logs it once', async () => {
    // Two model calls ending with `eos`: a tool call, then the answer.
    llm.enqueue(
      reply.toolCalls([{ name: 'list_reminders', args: {} }], { finishReason: 'eos' }),
      reply.text('You have no reminders.', { finishReason: 'eos' }),
    );
    const stream = await ask('my reminders?', 'eos');
    expect(stream.text).toBe('You have no reminders.');
    expect(stream.error).toBeUndefined();
    expect(stream.ended).toBe(true);
    expect(await lastTurn('eos')).toMatchObject({
      answer: 'You have no reminders.',
      status: 'completed',
    });
    const logged = parley.logs.filter(
      (line) => line.code === 'unknown_finish_reason' && line.userId === 'eos',
    );
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ finishReason: 'eos' });

    llm.enqueue(reply.text('All done.', { finishReason: 'eos' }));
    const text = await streamed('eos-door');
    expect(text).toEqual({ content: 'All done.', finish: 'stop', error: undefined });
    llm.enqueue(reply.text('All done.', { finishReason: 'eos' }));
    const whole = await notStreamed('eos-door');
    expect((whole as OpenAI.ChatCompletion).choices[0]).toMatchObject({
      message: { content: 'All done.' },
      finish_reason: 'stop',
    });
  });
});

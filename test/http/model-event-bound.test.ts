import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ChatStream, parseChatStream } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import type { EndlessEvent } from '../support/fake-llm/reply.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const TOKEN = 'model-event-bound-token';
const TOO_LARGE = {
  code: 'model_bad_response',
  message:
    'The model server sent a response that could not be read: one of its events went on past 4 MiB without ending.',
};
/** Long enough for 4 MiB at the slow pace below on a busy machine; far below the chunk timeout. */
const ANSWER_WITHIN_MS = 12_000;

type Turn = { question: string; answer: string; interrupted: boolean; status: string | null };

/**
 * A model server (or a proxy before it) that sends one SSE event that never ends: Parley read
 * it into memory for as long as it came, the answer never ending (the chunk timeout counts
 * whole events, and is far away here, as an operator may set it). An event is read up to 4 MiB;
 * past that the answer ends like one whose connection broke, with its own message.
 */
describe.each(ENGINES)('a model server event that never ends, on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;
  /** The chat's stream as far as it came within ANSWER_WITHIN_MS, and how long it took. */
  const ask = async (message: string, userId: string) => {
    const started = Date.now();
    const signal = AbortSignal.timeout(ANSWER_WITHIN_MS);
    let raw = '';
    try {
      const response = await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message, user_id: userId }),
        signal,
      });
      const decoder = new TextDecoder();
      for await (const bytes of response.body as ReadableStream<Uint8Array>) {
        raw += decoder.decode(bytes, { stream: true });
      }
    } catch {
      // not ended within ANSWER_WITHIN_MS: what came is what the user saw
    }
    return { stream: parseChatStream(raw) as ChatStream, ms: Date.now() - started };
  };
  const lastTurn = async (userId: string): Promise<Turn | undefined> => {
    const page = (await (await parley.fetch(`/users/${userId}/history`)).json()) as {
      turns: Turn[];
    };
    return page.turns[0];
  };

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    parley = await startParley({
      dataDir: setup.dataDir,
      env: {
        ...setup.env,
        API_TOKEN: TOKEN,
        LLM_MODEL: 'fake-chat',
        LLM_CHUNK_TIMEOUT_MS: '600000',
      },
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

  // "after": the event starts after that many chunks (the first opens the assistant message,
  // three more carry "one two three").
  const cases: Array<{ name: string; after: number; endless: Omit<EndlessEvent, 'after'> }> = [
    {
      name: 'a data line at full speed',
      after: 4,
      endless: { kind: 'line', pieceBytes: 65_536, everyMs: 0 },
    },
    {
      name: 'a data line slowly',
      after: 4,
      endless: { kind: 'line', pieceBytes: 16_384, everyMs: 5 },
    },
    {
      name: 'a data line before any token',
      after: 0,
      endless: { kind: 'line', pieceBytes: 65_536, everyMs: 0 },
    },
    {
      name: 'garbage at full speed',
      after: 4,
      endless: { kind: 'garbage', pieceBytes: 65_536, everyMs: 0 },
    },
    {
      name: 'data lines at full speed',
      after: 4,
      endless: { kind: 'lines', pieceBytes: 4096, everyMs: 0 },
    },
    {
      name: '\\r-ended data lines',
      after: 4,
      endless: { kind: 'cr-lines', pieceBytes: 4096, everyMs: 0 },
    },
  ];

  it.each(cases)('ends the answer with a clear error: $name', async ({ name, after, endless }) => {
    const user = `endless-${name.replace(/\W+/g, '-')}`;
    const answer = after === 4 ? 'one two three' : '';
    llm.enqueue(reply.text('one two three', { chunks: 3, endlessEvent: { after, ...endless } }));
    const { stream, ms } = await ask('go', user);
    const exchange = llm.chats.at(-1);
    expect(stream.error).toEqual(TOO_LARGE);
    expect(stream.ended).toBe(true);
    expect(stream.text).toBe(answer);
    expect(ms).toBeLessThan(ANSWER_WITHIN_MS);
    // Parley hung up on the model server: it reads no more of the event.
    expect(await exchange?.ended).toBe('client-closed');
    expect(exchange?.endlessBytes).toBeLessThan(32 * 2 ** 20);

    // Stored as an answer whose connection broke is: kept as far as it came, the run failed.
    const tooLarge = await lastTurn(user);
    llm.enqueue(reply.text('one two three', { chunks: 3, disconnectAfter: after }));
    expect((await ask('again', user)).stream.error?.code).toBe('model_unreachable');
    const broken = await lastTurn(user);
    expect(tooLarge).toMatchObject({
      question: 'go',
      answer,
      interrupted: broken?.interrupted,
      status: broken?.status,
    });

    // The log says what happened as a code, without a byte of the event.
    const failed = await parley.waitForLog(
      (line) => line.msg === 'chat failed' && line.userId === user,
    );
    expect(failed).toMatchObject({
      code: 'model_bad_response',
      err: { cause: { type: 'ModelEventTooLargeError', code: 'model_event_too_large' } },
    });
    expect(JSON.stringify(parley.logs)).not.toMatch(/aaaaaaaa|chatcmpl-endless/);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineStack, startEngineStack } from '../support/chat-stack.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import type { RunningParley } from '../support/start-parley.ts';

/**
 * A statement that fails must not poison the connection it ran on for the next request: on the
 * embedded engine every pooled client shares PGlite's one session, so state a dropped client
 * left behind (a prepared statement, an open transaction) used to break every later chat.
 */
describe.each(ENGINES)('after a failed statement on the %s engine', (engine) => {
  let stack: EngineStack;
  let llm: FakeLlmServer;
  let parley: RunningParley;

  beforeAll(async () => {
    stack = await startEngineStack(engine);
    ({ llm, parley } = stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const ask = (message: string) => stack.chat('recovery', message);
  const feedbackFor = (runId: string) => stack.post('/feedback', { run_id: runId, score: 1 });

  it('chats keep working after feedback for an unknown run (a foreign-key violation)', async () => {
    llm.enqueue(reply.text('first answer'));
    const first = await ask('hello');
    expect(first.error).toBeUndefined();
    expect(first.text).toBe('first answer');

    for (let round = 0; round < 3; round++) {
      const missing = await feedbackFor('00000000-0000-4000-8000-000000000000');
      expect(missing.status).toBe(404);
      llm.enqueue(reply.text(`answer ${round}`));
      const next = await ask(`question ${round}`);
      expect(next.error).toBeUndefined();
      expect(next.text).toBe(`answer ${round}`);
      expect(next.runId).toBeDefined();
      // The turn was stored: feedback for it is accepted.
      expect((await feedbackFor(next.runId as string)).status).toBe(200);
    }
    // The history the model saw holds every earlier turn.
    const lastRequest = llm.chats.at(-1)?.body.messages ?? [];
    expect(lastRequest.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'hello',
      'question 0',
      'question 1',
      'question 2',
    ]);
    const health = await parley.fetch('/health');
    expect(health.status).toBe(200);
  });

  it('refuses a question PostgreSQL could not store (U+0000) with a 422, before any stream', async () => {
    const response = await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'a\u0000b', user_id: 'recovery' }),
    });
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({
      detail: [
        expect.objectContaining({
          loc: ['body', 'message'],
          msg: 'must not contain the NUL character (U+0000)',
        }),
      ],
    });
  });

  it('keeps the turn when the model answers with U+0000, stored as U+FFFD', async () => {
    llm.enqueue(reply.text('nul\u0000here'), reply.text('ok'));
    const stream = await ask('say something odd');
    expect(stream.error).toBeUndefined();
    expect(stream.text).toBe('nul\u0000here'); // streamed as sent
    await ask('and then?');
    const history = llm.chats.at(-1)?.body.messages ?? [];
    expect(history.filter((m) => m.role === 'assistant').map((m) => m.content)).toContain(
      'nul\ufffdhere',
    );
  });
});

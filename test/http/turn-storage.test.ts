import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineStack, startEngineStack } from '../support/chat-stack.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';

const USERS = 40;

/**
 * Turns are group-committed: chats that end together are stored together. Whatever the
 * grouping, each user's turn is stored whole, in order, under that user only, before the
 * `__done` that names its run.
 */
describe.each(ENGINES)('storing turns of chats that end together on the %s engine', (engine) => {
  let stack: EngineStack;
  let llm: FakeLlmServer;

  beforeAll(async () => {
    stack = await startEngineStack(engine);
    ({ llm } = stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const chat = (userId: string, message: string) => stack.chat(userId, message);

  it('stores every turn whole and in order, and each run can take feedback at once', async () => {
    // Every answer names its question, so a mixed-up turn would show.
    llm.respond((body) => {
      const question = String(body.messages.findLast((m) => m.role === 'user')?.content);
      return reply.text(`answer to ${question}`, { chunks: 3, delayMs: 20 });
    });
    const users = Array.from({ length: USERS }, (_, i) => `together-${i}`);
    const first = await Promise.all(users.map((user) => chat(user, `first from ${user}`)));
    // Each run is stored by the time its id arrives: feedback on it is accepted at once.
    const feedback = await Promise.all(
      first.map((stream) => stack.post('/feedback', { run_id: stream.runId, score: 1 })),
    );
    expect(feedback.map((response) => response.status)).toEqual(users.map(() => 200));

    const before = llm.chats.length;
    await Promise.all(users.map((user) => chat(user, `second from ${user}`)));
    const sent = llm.chats.slice(before).map((exchange) => exchange.body.messages);
    for (const user of users) {
      const messages = sent.find((m) =>
        m.some((message) => message.role === 'user' && message.content === `second from ${user}`),
      );
      const history = messages?.filter((m) => m.role !== 'system').map((m) => m.content);
      expect(history).toEqual([
        `first from ${user}`,
        `answer to first from ${user}`,
        `second from ${user}`,
      ]);
    }
    llm.assertNoUnexpected();
  });

  it('answers a user whose stored history is larger than a socket buffer', async () => {
    // Each answer is 300 KB; the history read before the model call is then megabytes.
    const long = 'lorem ipsum '.repeat(25_000);
    llm.respond(() => reply.text(long, { chunks: 10 }));
    for (let i = 0; i < 5; i++) {
      const stream = await chat('long-history', `long ${i}`);
      expect(stream.error).toBeUndefined();
      expect(stream.text).toBe(long);
    }
    llm.respond(() => reply.text('still here'));
    const last = await chat('long-history', 'are you there?');
    expect(last.text).toBe('still here');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import {
  type ChatCompletionRequest,
  type FakeLlmServer,
  reply,
} from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/** A memory decision asks for structured output; a chat does not. */
const isDecision = (body: ChatCompletionRequest) => body.response_format !== undefined;

interface Memory {
  id: string;
  conversation_id: string | null;
  text: string;
}

describe.each(ENGINES)('conversation memory and conversations on the %s engine', (engine) => {
  let parley: RunningParley;
  let llm: FakeLlmServer;
  let setup: EngineSetup;

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    llm.respond((body) => {
      if (!isDecision(body)) return reply.text('Noted.');
      const exchange = JSON.stringify(body.messages);
      const fact = exchange.includes('corgi') ? 'The user has a corgi.' : 'The user likes tea.';
      return reply.text(JSON.stringify({ remember: true, memory: fact }));
    });
    parley = await startParley({
      dataDir: setup.dataDir,
      env: {
        ...setup.env,
        EMBEDDINGS_PROVIDER: 'none',
        CONV_RAG_ENABLED: 'true',
      },
    });
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  const chat = async (message: string) => {
    const response = await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'max', message }),
    });
    const conversationId = response.headers.get('x-parley-conversation-id') as string;
    return { ...(await readChat(response)), conversationId };
  };
  const memories = async () =>
    ((await (await parley.fetch('/users/max/memories')).json()) as { memories: Memory[] }).memories;

  it('records the conversation each memory came from, and deleting it deletes them', async () => {
    const dog = await chat('I have a corgi called Bora.');
    await parley.fetch('/users/max/conversations', { method: 'POST' });
    const tea = await chat('I like tea.');
    await expect.poll(async () => (await memories()).length, { timeout: 15_000 }).toBe(2);
    expect(
      (await memories()).map((memory) => [memory.id, memory.conversation_id, memory.text]).sort(),
    ).toEqual(
      [
        [dog.runId, dog.conversationId, 'The user has a corgi.'],
        [tea.runId, tea.conversationId, 'The user likes tea.'],
      ].sort(),
    );

    const deleted = await parley.fetch(`/users/max/conversations/${dog.conversationId}`, {
      method: 'DELETE',
    });
    expect(deleted.status).toBe(200);
    expect((await memories()).map((memory) => memory.id)).toEqual([tea.runId]);

    await parley.fetch('/users/max/conversations', { method: 'DELETE' });
    expect(await memories()).toEqual([]);
  });
});

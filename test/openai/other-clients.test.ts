import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { APICallError, generateText, streamText } from 'ai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { lockstep } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const TOKEN = 'other-clients-admin-token';

// Clients nobody here wrote, pointed at Parley as their users would point them.
describe.each(ENGINES)('LangChain and the AI SDK against Parley on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;
  let key: string;
  const baseURL = () => `${parley.url}/v1`;

  beforeAll(async () => {
    setup = await engineSetup(engine);
    llm = setup.llm;
    parley = await startParley({
      dataDir: setup.dataDir,
      env: {
        ...setup.env,
        API_TOKEN: TOKEN,
        LLM_MODEL: 'fake-chat',
        LLM_CHUNK_TIMEOUT_MS: '2000',
      },
    });
    const created = await parley.fetch('/admin/users', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'dana' }),
    });
    key = ((await created.json()) as { key: string }).key;
  }, 120_000);
  afterEach(() => {
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  describe("LangChain's ChatOpenAI", () => {
    const chatModel = (apiKey: string) =>
      new ChatOpenAI({
        model: 'parley',
        apiKey,
        maxRetries: 0,
        configuration: { baseURL: baseURL() },
      });

    it('answers a non-streamed call with usage', async () => {
      llm.enqueue(reply.text('Hello from Parley', { usage: { prompt: 9, completion: 3 } }));
      const message = await chatModel(key).invoke([
        ['system', 'Be brief.'],
        ['human', 'Hello'],
      ]);
      expect(message.content).toBe('Hello from Parley');
      expect(message.usage_metadata).toMatchObject({ input_tokens: 9, output_tokens: 3 });
      expect(message.id).toMatch(/^chatcmpl-/);
    });

    it('streams a call chunk by chunk', async () => {
      const pacer = lockstep();
      llm.enqueue(
        reply.text('one two three four', { pace: pacer.pace, usage: { prompt: 5, completion: 4 } }),
      );
      const pieces: string[] = [];
      for await (const chunk of await chatModel(key).stream('Count')) {
        if (typeof chunk.content === 'string' && chunk.content) pieces.push(chunk.content);
        pacer.shown(pieces.join(''));
      }
      expect(pieces).toEqual(['one', ' two', ' three', ' four']);
      expect(pieces.join('')).toBe('one two three four');
    });

    it('raises an error for a wrong key', async () => {
      const error = await chatModel('pk_wrong-key-for-langchain')
        .invoke('Hello')
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect((error as { status?: number }).status).toBe(401);
    });
  });

  describe("the AI SDK's OpenAI-compatible provider", () => {
    const provider = (apiKey: string) =>
      createOpenAICompatible({ name: 'parley', baseURL: baseURL(), apiKey, includeUsage: true });

    it('generates text', async () => {
      llm.enqueue(reply.text('Generated answer', { usage: { prompt: 7, completion: 2 } }));
      const result = await generateText({
        model: provider(key)('parley'),
        prompt: 'Hello',
        maxRetries: 0,
      });
      expect(result.text).toBe('Generated answer');
      expect(result.finishReason).toBe('stop');
      expect(result.usage).toMatchObject({ inputTokens: 7, outputTokens: 2 });
    });

    it('streams text and reasoning apart', async () => {
      llm.enqueue(reply.reasoning('First, think.', 'Streamed answer'));
      const result = streamText({
        model: provider(key)('parley'),
        prompt: 'Hello',
        maxRetries: 0,
      });
      let text = '';
      for await (const delta of result.textStream) text += delta;
      expect(text).toBe('Streamed answer');
      expect(await result.reasoningText).toBe('First, think.');
    });

    it('raises an APICallError with the status for a wrong model', async () => {
      const error = await generateText({
        model: provider(key)('gpt-4o'),
        prompt: 'Hello',
        maxRetries: 0,
      }).catch((e: unknown) => e);
      expect(APICallError.isInstance(error)).toBe(true);
      expect((error as APICallError).statusCode).toBe(404);
    });
  });
});

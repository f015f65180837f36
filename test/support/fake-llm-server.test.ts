import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  APICallError,
  embedMany,
  extractReasoningMiddleware,
  generateText,
  stepCountIs,
  streamText,
  type TextStreamPart,
  type ToolSet,
  tool,
  wrapLanguageModel,
} from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type FakeLlmServer, reply, startFakeLlmServer } from './fake-llm-server.ts';

let server: FakeLlmServer;

beforeEach(async () => {
  server = await startFakeLlmServer();
});

afterEach(async () => {
  try {
    server.assertNoUnexpected();
    server.assertAllConsumed();
  } finally {
    await server.close();
  }
});

function provider(apiKey = 'test') {
  return createOpenAICompatible({ baseURL: server.url, name: 'fake', apiKey, includeUsage: true });
}

async function collect<TOOLS extends ToolSet>(stream: AsyncIterable<TextStreamPart<TOOLS>>) {
  const parts: TextStreamPart<TOOLS>[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

/** Errors are asserted on the stream; this only keeps streamText from logging them. */
const onError = () => {};

function textDeltas(parts: TextStreamPart<ToolSet>[]): string[] {
  return parts.flatMap((part) => (part.type === 'text-delta' ? [part.text] : []));
}

const weather = tool({
  description: 'Current weather of a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, sky: city === 'Seoul' ? 'sunny' : 'rainy' }),
});

describe('fake LLM server driven by the AI SDK', () => {
  it('streams text in the requested token chunks, with usage', async () => {
    server.enqueue(reply.text('안녕하세요', { chunks: 5, usage: { prompt: 12, completion: 5 } }));
    const result = streamText({ model: provider()('fake-chat'), prompt: '인사해 줘' });

    expect(textDeltas(await collect(result.fullStream))).toEqual(['안', '녕', '하', '세', '요']);
    expect(await result.finishReason).toBe('stop');
    const usage = await result.totalUsage;
    expect([usage.inputTokens, usage.outputTokens, usage.totalTokens]).toEqual([12, 5, 17]);
    const [chat] = server.chats;
    expect(chat?.body).toMatchObject({
      model: 'fake-chat',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: '인사해 줘' }],
    });
    expect(chat?.outcome).toBe('completed');
    expect(server.requests[0]?.headers.authorization).toBe('Bearer test');
  });

  it('streams reasoning as reasoning_content, as reasoning, and as <think> tags', async () => {
    server.enqueue(
      reply.reasoning('Count the letters.', 'Three.'),
      reply.reasoning('Count the letters.', 'Three.', { format: 'reasoning' }),
      reply.reasoning('Count the letters.', 'Three.', { format: 'think-tags' }),
    );
    for (const format of ['reasoning_content', 'reasoning']) {
      const result = streamText({ model: provider()('fake-chat'), prompt: format });
      expect(await result.reasoningText).toBe('Count the letters.');
      expect(await result.text).toBe('Three.');
    }
    const model = wrapLanguageModel({
      model: provider()('fake-chat'),
      middleware: extractReasoningMiddleware({ tagName: 'think' }),
    });
    const result = streamText({ model, prompt: 'think-tags' });
    expect((await result.reasoningText)?.trim()).toBe('Count the letters.');
    expect((await result.text).trim()).toBe('Three.');
  });

  it('runs a tool loop over parallel tool calls with arguments split across deltas', async () => {
    server.enqueue(
      reply.toolCalls(
        [
          { name: 'weather', args: { city: 'Seoul' } },
          { name: 'weather', args: { city: 'Busan' } },
        ],
        { argChunks: 4 },
      ),
      reply.text('Seoul is sunny, Busan is rainy.'),
    );
    const result = streamText({
      model: provider()('fake-chat'),
      prompt: 'Weather in Seoul and Busan?',
      tools: { weather },
      stopWhen: stepCountIs(3),
    });

    const parts = await collect(result.fullStream);
    expect(parts.filter((part) => part.type === 'tool-input-delta').length).toBeGreaterThan(2);
    const steps = await result.steps;
    expect(steps.map((step) => step.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(steps[0]?.toolCalls.map((call) => call.input)).toEqual([
      { city: 'Seoul' },
      { city: 'Busan' },
    ]);
    expect(steps[0]?.toolResults.map((r) => r.output)).toEqual([
      { city: 'Seoul', sky: 'sunny' },
      { city: 'Busan', sky: 'rainy' },
    ]);
    expect(await result.text).toBe('Seoul is sunny, Busan is rainy.');
    // The second request carries the tool results under the ids the fake generated.
    const toolMessages = server.chats[1]?.body.messages.filter((m) => m.role === 'tool');
    expect(toolMessages?.map((m) => m.tool_call_id)).toEqual(['call_fake_1_1', 'call_fake_1_2']);
    expect(server.chats[0]?.body.tools?.[0]?.function.name).toBe('weather');
  });

  it('computes replies from the request with respond()', async () => {
    server.respond((request) => {
      const last = request.messages.at(-1);
      return last?.role === 'tool'
        ? reply.text(`The tool said ${JSON.stringify(last.content)}`)
        : reply.toolCalls([{ name: 'weather', args: { city: 'Seoul' } }]);
    });
    const result = streamText({
      model: provider()('fake-chat'),
      prompt: 'Weather?',
      tools: { weather },
      stopWhen: stepCountIs(3),
    });
    expect(await result.text).toContain('sunny');
    expect(server.chats).toHaveLength(2);
  });

  it('surfaces an upstream 500 as an APICallError', async () => {
    server.enqueue(reply.error(500));
    const result = streamText({
      model: provider()('fake-chat'),
      prompt: 'hi',
      maxRetries: 0,
      onError,
    });
    const errors = (await collect(result.fullStream)).filter((part) => part.type === 'error');
    expect(errors).toHaveLength(1);
    const error = errors[0]?.error;
    expect(APICallError.isInstance(error) && error.statusCode).toBe(500);
    expect(APICallError.isInstance(error) && error.message).toContain('server had an error');
  });

  it('answers 429 with retry headers, which the SDK honours before retrying', async () => {
    server.enqueue(reply.error(429, { headers: { 'retry-after-ms': '10' } }), reply.text('ok'));
    const result = streamText({ model: provider()('fake-chat'), prompt: 'hi', maxRetries: 1 });
    expect(await result.text).toBe('ok');
    expect(server.chats).toHaveLength(2);
  });

  it('drops the connection mid-stream without [DONE]', async () => {
    server.enqueue(reply.text('one two three four', { disconnectAfter: 3 }));
    const result = streamText({ model: provider()('fake-chat'), prompt: 'count', maxRetries: 0 });
    const parts: TextStreamPart<ToolSet>[] = [];
    // The SDK does not turn a broken body into an error part: the stream itself fails.
    const reading = (async () => {
      for await (const part of result.fullStream) parts.push(part);
    })();
    await expect(reading).rejects.toThrow(/Failed to process successful response/);
    expect(textDeltas(parts)).toEqual(['one', ' two']);
    expect(await server.chats[0]?.ended).toBe('server-disconnected');
    expect(server.closedEarly).toEqual([]);
  });

  it('sends a malformed chunk the SDK reports, then carries on', async () => {
    server.enqueue(reply.text('a b c', { malformedAfter: 2 }));
    const result = streamText({ model: provider()('fake-chat'), prompt: 'abc', onError });
    const parts = await collect(result.fullStream);
    expect(parts.some((part) => part.type === 'error')).toBe(true);
    expect(textDeltas(parts).join('')).toBe('a b c');
  });

  it('sees an AbortSignal abort as the client closing the stream', async () => {
    server.enqueue(reply.text('slow '.repeat(50), { delayMs: 20 }));
    const abort = new AbortController();
    const result = streamText({
      model: provider()('fake-chat'),
      prompt: 'go slowly',
      abortSignal: abort.signal,
    });
    const parts: TextStreamPart<ToolSet>[] = [];
    for await (const part of result.fullStream) {
      parts.push(part);
      if (part.type === 'text-delta') abort.abort();
    }
    expect(parts.at(-1)?.type).toBe('abort');
    const closed = await server.waitForClientClose();
    expect(closed).toBe(server.chats[0]);
    expect(closed.outcome).toBe('client-closed');
  });

  it('stalls after the headers until the client gives up', async () => {
    server.enqueue(reply.stall());
    const result = streamText({
      model: provider()('fake-chat'),
      prompt: 'hello?',
      abortSignal: AbortSignal.timeout(100),
    });
    const parts = await collect(result.fullStream);
    expect(textDeltas(parts)).toEqual([]);
    expect((await server.waitForClientClose()).outcome).toBe('client-closed');
  });

  it('answers stream: false with a chat.completion', async () => {
    server.enqueue(
      reply.reasoning('Short.', 'Hello there.'),
      reply.toolCalls([{ name: 'weather', args: { city: 'Seoul' } }]),
    );
    const text = await generateText({ model: provider()('fake-chat'), prompt: 'hi' });
    expect([text.reasoningText, text.text]).toEqual(['Short.', 'Hello there.']);
    expect(text.usage.inputTokens).toBeGreaterThan(0);
    const calls = await generateText({
      model: provider()('fake-chat'),
      prompt: 'weather',
      tools: { weather: { ...weather, execute: undefined } },
    });
    expect(calls.toolCalls.map((call) => [call.toolName, call.input])).toEqual([
      ['weather', { city: 'Seoul' }],
    ]);
    expect(server.chats.map((chat) => chat.body.stream ?? false)).toEqual([false, false]);
  });
});

describe('fake LLM server replaying provider recordings', () => {
  const anyTool = (name: string, input: z.ZodObject) => ({ [name]: tool({ inputSchema: input }) });

  it('replays a DeepSeek tool call with reasoning', async () => {
    server.enqueue(reply.replay('deepseek__deepseek-tool-call.chunks.txt'));
    const result = streamText({
      model: provider()('deepseek-v4-flash'),
      prompt: 'Weather in San Francisco?',
      tools: anyTool('weather', z.object({ location: z.string() })),
    });
    expect(await result.reasoningText).toContain('weather in San');
    const calls = await result.toolCalls;
    expect(calls.map((call) => [call.toolName, call.input])).toEqual([
      ['weather', { location: 'San Francisco' }],
    ]);
    expect((await result.totalUsage).outputTokenDetails.reasoningTokens).toBe(17);
  });

  it('replays Groq reasoning sent in the `reasoning` field', async () => {
    server.enqueue(reply.replay('groq__groq-reasoning.chunks.txt'));
    const result = streamText({ model: provider()('qwen/qwen3-32b'), prompt: 'a question' });
    expect(await result.reasoningText).toMatch(/^Okay, let me try to figure out how many/);
    expect(await result.text).toMatch(/\}\$$/);
    expect(await result.finishReason).toBe('stop');
  });

  it('replays a Mistral tool call whose name and arguments arrive in separate deltas', async () => {
    server.enqueue(reply.replay('mistral__mistral-incremental-tool-call.chunks.txt'));
    const result = streamText({
      model: provider()('zai-glm-5-2'),
      prompt: 'Berlin weather?',
      tools: anyTool('webSearchTool', z.object({ query: z.string() })),
    });
    const calls = await result.toolCalls;
    expect(calls.map((call) => [call.toolName, call.input])).toEqual([
      ['webSearchTool', { query: 'current Berlin weather' }],
    ]);
  });

  it('replays an already framed .sse recording with text and a tool call at index 1', async () => {
    server.enqueue(reply.replay('openai-compatible__anthropic-fallback-tool-call.sse'));
    const result = streamText({
      model: provider()('claude-haiku-4-5'),
      prompt: 'Read a.txt',
      tools: anyTool('read_file', z.object({ path: z.string() })),
    });
    expect(await result.text).toBe('Reading it.');
    expect((await result.toolCalls).map((call) => call.input)).toEqual([{ path: 'a.txt' }]);
  });

  it('refuses to script a recording that does not exist', () => {
    expect(() => reply.replay('nope.chunks.txt')).toThrow(/no LLM stream recording at .*nope/);
  });

  it('folds a recording into a chat.completion for stream: false', async () => {
    server.enqueue(reply.replay('deepseek__deepseek-tool-call.chunks.txt'));
    const result = await generateText({
      model: provider()('deepseek-v4-flash'),
      prompt: 'Weather in San Francisco?',
      tools: anyTool('weather', z.object({ location: z.string() })),
    });
    expect(result.toolCalls.map((call) => call.input)).toEqual([{ location: 'San Francisco' }]);
  });
});

describe('fake LLM server embeddings, models and unexpected requests', () => {
  it('embeds deterministically: normalised, 384-d, closer for shared words', async () => {
    const values = [
      'the cat sat on the mat',
      'the cat sat on the mat',
      'a cat on a mat',
      'stock prices fell',
    ];
    const { embeddings } = await embedMany({
      model: provider().embeddingModel('fake-embed'),
      values,
    });
    const [a, same, near, far] = embeddings as [number[], number[], number[], number[]];
    const dot = (x: number[], y: number[]) => x.reduce((sum, v, i) => sum + v * (y[i] ?? 0), 0);
    expect(a).toHaveLength(384);
    expect(dot(a, a)).toBeCloseTo(1, 6);
    expect(same).toEqual(a);
    expect(dot(a, near)).toBeGreaterThan(dot(a, far));
    expect(server.requests.map((r) => r.path)).toEqual(['/v1/embeddings']);
  });

  it('fails embeddings on request, then recovers', async () => {
    server.failEmbeddings(reply.error(503));
    const model = provider().embeddingModel('fake-embed');
    await expect(embedMany({ model, values: ['x'], maxRetries: 0 })).rejects.toThrow(/overloaded/);
    const { embeddings } = await embedMany({ model, values: ['x'], maxRetries: 0 });
    expect(embeddings[0]).toHaveLength(384);
  });

  it('lists models', async () => {
    const response = await fetch(`${server.url}/models`);
    expect(await response.json()).toMatchObject({
      object: 'list',
      data: [{ id: 'fake-chat', object: 'model' }, { id: 'fake-embed' }],
    });
  });

  it('records unknown routes and unscripted chats as unexpected, with OpenAI-style errors', async () => {
    const unknown = await fetch(`${server.url}/completions`, { method: 'POST', body: '{}' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'unknown_url' } });
    await expect(
      generateText({ model: provider()('fake-chat'), prompt: 'hi', maxRetries: 0 }),
    ).rejects.toThrow(/no scripted reply/);
    expect(server.unexpected.map((u) => u.reason)).toEqual([
      'no such route',
      'no scripted reply for this chat request',
    ]);
    expect(() => server.assertNoUnexpected()).toThrow(/2 unexpected request/);
    server.unexpected.length = 0;
  });

  it('rejects a wrong API key when one is configured', async () => {
    const guarded = await startFakeLlmServer({ apiKey: 'secret' });
    try {
      guarded.enqueue(reply.text('welcome'));
      const model = (key: string) =>
        createOpenAICompatible({ baseURL: guarded.url, name: 'fake', apiKey: key })('fake-chat');
      await expect(
        generateText({ model: model('wrong'), prompt: 'hi', maxRetries: 0 }),
      ).rejects.toThrow(/bearer token/);
      expect((await generateText({ model: model('secret'), prompt: 'hi' })).text).toBe('welcome');
      expect(guarded.unexpected).toHaveLength(1);
    } finally {
      await guarded.close();
    }
  });
});

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI, { type APIError } from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const TOKEN = 'openai-door-admin-token';
const RUN_ID = /^chatcmpl-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A PNG signature and some bytes: enough for the type check, never decoded. */
const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.from('a red square'),
]);
const RECORDED = join(import.meta.dirname, '../../../shared/data/llm-streams/openai');

type Message = { role: string; content?: unknown };

// The official SDK as the client: every contract case of issue 23, on both engines.
describe.each(ENGINES)('the OpenAI-compatible API on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;
  /** Alice's own key (`pk_…`). */
  let aliceKey: string;
  const client = (apiKey: string) =>
    new OpenAI({ baseURL: `${parley.url}/v1`, apiKey, maxRetries: 0 });
  const admin = (path: string, method: string, body?: unknown) =>
    parley.fetch(path, {
      method,
      headers: body ? { 'content-type': 'application/json' } : {},
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  const modelRequest = (index: number) => llm.chats[index]?.body.messages as Message[];
  const rawCompletion = (body: Record<string, unknown>, key = aliceKey) =>
    parley.fetch('/v1/chat/completions', {
      method: 'POST',
      token: key,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'parley', ...body }),
    });

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
        MESSAGE_MAX_CHARS: '2000',
        VISION_ENABLED: 'true',
        VISION_MODEL_ID: 'fake-vision',
        VISION_BASE_URL: llm.url,
      },
    });
    const created = await admin('/admin/users', 'POST', { user_id: 'alice' });
    aliceKey = ((await created.json()) as { key: string }).key;
  }, 120_000);
  afterEach(() => {
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
    llm.chats.length = 0; // each test reads its own model requests from index 0
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('lists and describes the one model, parley', async () => {
    const models = await client(aliceKey).models.list();
    expect(models.data).toEqual([
      { id: 'parley', object: 'model', created: expect.any(Number), owned_by: 'parley' },
    ]);
    const raw = await parley.fetch('/v1/models', { token: aliceKey });
    expect(((await raw.json()) as { object: string }).object).toBe('list');
    expect((await client(aliceKey).models.retrieve('parley')).id).toBe('parley');
  });

  it("answers a non-streamed completion with the user's assistant and the client's conversation", async () => {
    llm.enqueue(reply.text('Arr, hello Alice', { usage: { prompt: 40, completion: 5 } }));
    const completion = await client(aliceKey).chat.completions.create({
      model: 'parley',
      messages: [
        { role: 'system', content: 'Answer like a pirate.' },
        { role: 'user', content: 'My name is Alice.' },
        { role: 'assistant', content: 'Ahoy Alice!' },
        { role: 'user', content: [{ type: 'text', text: 'Say hello.' }] },
      ],
      max_tokens: 50,
      temperature: 0.2,
    });
    expect(completion.id).toMatch(RUN_ID);
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('parley');
    expect(completion.choices).toEqual([
      {
        index: 0,
        message: { role: 'assistant', content: 'Arr, hello Alice', refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ]);
    expect(completion.usage).toMatchObject({
      prompt_tokens: 40,
      completion_tokens: 5,
      total_tokens: 45,
    });

    // Parley's own system prompt first, the client's after it; then the client's messages.
    const sent = modelRequest(0);
    expect(sent[0]?.role).toBe('system');
    const system = String(sent[0]?.content);
    expect(system).toContain('The current date and time for the user is ');
    expect(system.trimEnd().endsWith('Answer like a pirate.')).toBe(true);
    expect(sent.slice(1)).toEqual([
      { role: 'user', content: 'My name is Alice.' },
      { role: 'assistant', content: 'Ahoy Alice!' },
      { role: 'user', content: 'Say hello.' },
    ]);
    expect(llm.chats[0]?.body).toMatchObject({ max_tokens: 50, temperature: 0.2 });

    // The completion is a run of alice's: feedback takes its id.
    const feedback = await parley.fetch('/feedback', {
      method: 'POST',
      token: aliceKey,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run_id: completion.id.slice('chatcmpl-'.length), score: 1 }),
    });
    expect(feedback.status).toBe(200);
  });

  it('hands max_completion_tokens, max_tokens and temperature to every model call', async () => {
    // Its own user: every test of alice's counts against her 20 chats a minute.
    const ask = (extra: Partial<OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming>) =>
      client(TOKEN).chat.completions.create({
        model: 'parley',
        messages: [{ role: 'user', content: 'Remind me.' }],
        user: 'settings',
        ...extra,
      });
    // A tool step and the answer: both calls of the chat carry the client's settings.
    llm.enqueue(
      reply.toolCalls([{ name: 'set_reminder', args: { title: 'x', date: 'not-a-date' } }]),
      reply.text('I could not set it.'),
    );
    await ask({ max_completion_tokens: 77, temperature: 1.3 });
    expect(llm.chats.map((c) => [c.body.max_tokens, c.body.temperature])).toEqual([
      [77, 1.3],
      [77, 1.3],
    ]);

    // The older max_tokens, and a temperature of 0 (falsy, still a setting), streamed.
    llm.enqueue(reply.text('Cold.'));
    const stream = await client(TOKEN).chat.completions.create({
      model: 'parley',
      messages: [{ role: 'user', content: 'Be exact.' }],
      user: 'settings',
      max_tokens: 33,
      temperature: 0,
      stream: true,
    });
    for await (const _ of stream);
    expect(llm.chats[2]?.body).toMatchObject({ max_tokens: 33, temperature: 0 });

    // Both given: max_completion_tokens wins, as OpenAI reads them.
    llm.enqueue(reply.text('Short.'));
    await ask({ max_completion_tokens: 12, max_tokens: 900 });
    expect(llm.chats[3]?.body.max_tokens).toBe(12);

    // Neither given: Parley adds none of its own.
    llm.enqueue(reply.text('Free.'));
    await ask({});
    expect(llm.chats[4]?.body).not.toHaveProperty('temperature');
    expect(llm.chats[4]?.body).not.toHaveProperty('max_tokens');
  });

  it("keeps the exchange out of /chat's stored history", async () => {
    llm.enqueue(reply.text('Noted.'), reply.text('Hello again.'));
    await client(aliceKey).chat.completions.create({
      model: 'parley',
      messages: [{ role: 'user', content: 'A secret only this client knows.' }],
    });
    const chat = await parley.fetch('/chat', {
      method: 'POST',
      token: aliceKey,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Hi' }),
    });
    await chat.text();
    const history = modelRequest(1).filter((m) => m.role !== 'system');
    expect(JSON.stringify(history)).not.toContain('A secret only this client knows.');
    expect(history.at(-1)).toEqual({ role: 'user', content: 'Hi' });
  });

  it('streams chunks as OpenAI sends them, with include_usage', async () => {
    llm.enqueue(reply.text('one two three', { usage: { prompt: 12, completion: 3 } }));
    const stream = await client(aliceKey).chat.completions.create({
      model: 'parley',
      messages: [{ role: 'user', content: 'Count to three.' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0]?.id).toMatch(RUN_ID);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('one two three');
    const withChoices = chunks.filter((c) => c.choices.length > 0);
    expect(withChoices.at(-1)?.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    expect(withChoices.slice(0, -1).every((c) => c.choices[0]?.finish_reason === null)).toBe(true);
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toMatchObject({
      prompt_tokens: 12,
      completion_tokens: 3,
      total_tokens: 15,
    });
  });

  it.each(OPENAI_RECORDINGS)(
    'frames every chunk field for field as OpenAI did in %s',
    async (name) => {
      const recording = readRecording(name);
      const theirs = recording.chunks.map((chunk) => laterFieldsRemoved(chunk, recording.dated));
      const finish = theirs.find((chunk) => kindOf(chunk) === 'finish') as Chunk;
      const theirFinish = finish.choices?.[0]?.finish_reason as string;
      expect(['stop', 'length', 'tool_calls', 'content_filter']).toContain(theirFinish);
      // Tools run inside Parley: where OpenAI ended on tool_calls, the client sees a stop.
      const finishReason = theirFinish === 'tool_calls' ? 'stop' : theirFinish;
      llm.enqueue(
        reply.text('Hello there, friend', { usage: { prompt: 3, completion: 4 }, finishReason }),
      );
      const response = await rawCompletion(
        {
          messages: [{ role: 'user', content: 'Hello' }],
          stream: true,
          stream_options: { include_usage: true },
          user: 'framing',
        },
        TOKEN,
      );
      expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      const body = await response.text();
      // The framing: `data: <one line>` events, each ended by a blank line, then [DONE].
      expect(body).toMatch(/^(data: [^\n]+\n\n)+$/);
      if (recording.raw !== undefined) expect(recording.raw).toMatch(/^(data: [^\n]+\n\n)+$/);
      const lines = dataLines(body);
      expect(lines.at(-1)).toBe('[DONE]');
      const mine = lines.slice(0, -1).map((line) => JSON.parse(line) as Chunk);

      // The same sequence of kinds: the role chunk, content deltas, the finish chunk, usage.
      const sequence = (chunks: Chunk[]) =>
        chunks.map(kindOf).filter((kind, i, all) => kind !== all[i - 1]);
      const kinds = sequence(theirs).filter((kind) => kind !== 'tool_calls');
      expect(kinds).toEqual(['role', 'content', 'finish', 'usage']);
      expect(sequence(mine)).toEqual(kinds);

      for (const kind of kinds) {
        const ofKind = (chunks: Chunk[]) => chunks.filter((chunk) => kindOf(chunk) === kind);
        // Every chunk of a kind has one shape in the recording: that shape is the reference.
        const reference = new Set(ofKind(theirs).map((chunk) => JSON.stringify(shapeOf(chunk))));
        expect(reference.size, `${kind} chunks of ${name}`).toBe(1);
        for (const chunk of ofKind(mine)) {
          expect(shapeOf(chunk), `Parley's ${kind} chunk`).toEqual(shapeOf(ofKind(theirs)[0]));
        }
      }
      // The values that are the same in every stream, theirs and Parley's.
      for (const chunks of [theirs, mine]) {
        expect(new Set(chunks.map((chunk) => chunk.object))).toEqual(
          new Set(['chat.completion.chunk']),
        );
        expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
        const withChoices = chunks.filter((chunk) => kindOf(chunk) !== 'usage');
        expect(withChoices.every((chunk) => chunk.choices?.length === 1)).toBe(true);
        expect(new Set(withChoices.map((chunk) => chunk.choices?.[0]?.index))).toEqual(
          new Set([0]),
        );
        expect(chunks.map((chunk) => chunk.choices?.[0]?.finish_reason ?? null)).toEqual([
          ...Array(chunks.length - 2).fill(null),
          chunks === theirs ? theirFinish : finishReason,
          null,
        ]);
        const deltaKeys = (kind: string) =>
          new Set(
            chunks
              .filter((chunk) => kindOf(chunk) === kind)
              .map((chunk) =>
                Object.keys(chunk.choices?.[0]?.delta ?? {})
                  .sort()
                  .join(),
              ),
          );
        expect(deltaKeys('role')).toEqual(new Set(['content,refusal,role']));
        expect(deltaKeys('content')).toEqual(new Set(['content']));
        expect(deltaKeys('finish')).toEqual(new Set(['']));
        const [first] = chunks;
        expect(first?.choices?.[0]?.delta).toEqual({
          role: 'assistant',
          content: '',
          refusal: null,
        });
        const usage = chunks.at(-1);
        expect(usage?.choices).toEqual([]);
        const counts = usage?.usage as { prompt_tokens: number; completion_tokens: number };
        expect(usage?.usage).toMatchObject({
          total_tokens: counts.prompt_tokens + counts.completion_tokens,
        });
      }
    },
  );

  it('sends reasoning as reasoning_content, never in content', async () => {
    llm.enqueue(
      reply.reasoning('Think: greet back.', 'Hello!'),
      reply.reasoning('Think again.', 'Hi!'),
    );
    const stream = await client(aliceKey).chat.completions.create({
      model: 'parley',
      messages: [{ role: 'user', content: 'Hello' }],
      stream: true,
    });
    let content = '';
    let reasoning = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string };
      content += delta?.content ?? '';
      reasoning += delta?.reasoning_content ?? '';
    }
    expect(content).toBe('Hello!');
    expect(reasoning).toBe('Think: greet back.');

    const completion = await client(aliceKey).chat.completions.create({
      model: 'parley',
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(completion.choices[0]?.message).toMatchObject({
      content: 'Hi!',
      reasoning_content: 'Think again.',
    });
  });

  it('hands an image part to analyze_image and refuses a remote image URL', async () => {
    llm.enqueue(
      reply.toolCalls([{ name: 'analyze_image', args: { question: 'What colour?' } }]),
      reply.text('It is a red square.'),
      reply.text('The image shows a red square.'),
    );
    const completion = await client(aliceKey).chat.completions.create({
      model: 'parley',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            {
              type: 'image_url',
              image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` },
            },
          ],
        },
      ],
    });
    expect(completion.choices[0]?.message.content).toBe('The image shows a red square.');
    const vision = llm.chats[1]?.body;
    expect(vision?.model).toBe('fake-vision');
    expect(JSON.stringify(vision?.messages)).toContain(PNG.toString('base64'));

    const error = await client(aliceKey)
      .chat.completions.create({
        model: 'parley',
        messages: [
          {
            role: 'user',
            content: [{ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }],
          },
        ],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as APIError).param).toBe('messages[0].content[0].image_url.url');
  });

  it('answers 400 naming the part for an image part without an image_url object', async () => {
    for (const part of [
      { type: 'image_url' },
      { type: 'image_url', image_url: `data:image/png;base64,${PNG.toString('base64')}` },
      { type: 'image_url', image_url: {} },
    ]) {
      const response = await parley.fetch('/v1/chat/completions', {
        method: 'POST',
        token: aliceKey,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'parley', messages: [{ role: 'user', content: [part] }] }),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        error: {
          type: 'invalid_request_error',
          param: 'messages[0].content[0].image_url.url',
          code: 'invalid_image_url',
        },
      });
    }
  });

  it('answers failures with the typed errors of the SDK', async () => {
    const fail = (promise: Promise<unknown>) =>
      promise.then(
        () => undefined,
        (e: unknown) => e,
      );
    const ask = (key: string, extra: Record<string, unknown> = {}) =>
      client(key).chat.completions.create({
        model: 'parley',
        messages: [{ role: 'user', content: 'Hi' }],
        ...extra,
      } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);

    const wrongKey = await fail(ask('pk_not-a-real-key-at-all'));
    expect(wrongKey).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((wrongKey as APIError).code).toBe('invalid_api_key');
    expect(await fail(client('nope').models.list())).toBeInstanceOf(OpenAI.AuthenticationError);

    expect(await fail(ask(aliceKey, { user: 'bob' }))).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const unknown = await fail(ask(aliceKey, { model: 'gpt-4o' }));
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect((unknown as APIError).code).toBe('model_not_found');

    const tools = await fail(
      ask(aliceKey, {
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      }),
    );
    expect(tools).toBeInstanceOf(OpenAI.BadRequestError);
    expect((tools as APIError).code).toBe('unsupported_parameter');
    expect((tools as APIError).param).toBe('tools');
    const badType = await fail(ask(aliceKey, { temperature: 'hot' }));
    expect(badType).toBeInstanceOf(OpenAI.BadRequestError);
    expect((badType as APIError).param).toBe('temperature');

    // A user over their limit: 429 with Retry-After, before any model call.
    const created = await admin('/admin/users', 'POST', { user_id: 'limited' });
    const limitedKey = ((await created.json()) as { key: string }).key;
    await admin('/admin/users/limited', 'PATCH', { limits: { chats_per_minute: 1 } });
    llm.enqueue(reply.text('Once.'));
    await ask(limitedKey);
    const limited = await fail(ask(limitedKey));
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(Number((limited as APIError).headers?.get('retry-after'))).toBeGreaterThan(0);

    // The model failing a non-streamed completion: a 5xx the SDK raises.
    llm.enqueue(reply.error(500));
    expect(await fail(ask(aliceKey))).toBeInstanceOf(OpenAI.InternalServerError);
  });

  it('answers 401 and unknown /v1 routes in OpenAI error shape, and /chat as before', async () => {
    const v1 = await parley.fetch('/v1/chat/completions', { method: 'POST', token: null });
    expect(v1.status).toBe(401);
    expect(v1.headers.get('www-authenticate')).toBe('Bearer');
    expect(await v1.json()).toEqual({
      error: {
        message: expect.any(String),
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      },
    });
    const chat = await parley.fetch('/chat', { method: 'POST', token: null });
    expect(await chat.json()).toEqual({ detail: 'Unauthorized' });
    const missing = await parley.fetch('/v1/embeddings', { method: 'POST', token: aliceKey });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { type: string } }).error.type).toBe(
      'invalid_request_error',
    );
    const malformed = await parley.fetch('/v1/chat/completions', {
      method: 'POST',
      token: aliceKey,
      headers: { 'content-type': 'application/json' },
      body: '{"model": ',
    });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: unknown }).error).toBeDefined();
  });

  it('ends a stream whose model fails with an error chunk the SDK raises, then [DONE]', async () => {
    llm.enqueue(reply.text('partial answer that breaks', { chunks: 4, disconnectAfter: 3 }));
    const stream = await client(aliceKey).chat.completions.create({
      model: 'parley',
      messages: [{ role: 'user', content: 'Tell me a story.' }],
      stream: true,
    });
    let content = '';
    let id = '';
    const error = await (async () => {
      for await (const chunk of stream) {
        id = chunk.id;
        content += chunk.choices[0]?.delta.content ?? '';
      }
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as APIError).code).toMatch(/^model_/);
    expect(content.length).toBeGreaterThan(0);
    // The partial answer is kept in the run (not in /chat's history): the export shows it.
    const exported = (await (
      await parley.fetch('/users/alice/export', { token: aliceKey })
    ).json()) as { runs: Array<{ run_id: string; status: string; answer: string | null }> };
    const run = exported.runs.find((r) => `chatcmpl-${r.run_id}` === id);
    expect(run).toMatchObject({ status: 'failed', answer: content });

    llm.enqueue(reply.text('partial answer that breaks', { chunks: 4, disconnectAfter: 3 }));
    const raw = dataLines(
      await (
        await rawCompletion({ messages: [{ role: 'user', content: 'Again.' }], stream: true })
      ).text(),
    );
    expect(raw.at(-1)).toBe('[DONE]');
    expect(JSON.parse(raw.at(-2) ?? '{}')).toMatchObject({
      error: { type: 'server_error', code: expect.stringMatching(/^model_/) },
    });
  });

  // /chat's rule (test/http/chat.test.ts): a model silent for LLM_CHUNK_TIMEOUT_MS (2 s here)
  // is given up, and the client is told model_timeout.
  it.each([
    ['stops sending after its headers', reply.stall],
    ['never answers, not even with headers', reply.silent],
  ])('times out a model that %s: an error chunk then [DONE], or a 500', async (_case, fault) => {
    llm.enqueue(fault());
    let started = Date.now();
    const streamed = await rawCompletion(
      { messages: [{ role: 'user', content: 'Wait for it.' }], stream: true, user: 'patient' },
      TOKEN,
    );
    expect(streamed.status).toBe(200);
    const lines = dataLines(await streamed.text());
    let waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(1_900); // the timeout, not a quick failure
    expect(waited).toBeLessThan(10_000);
    expect(lines.at(-1)).toBe('[DONE]');
    expect(JSON.parse(lines.at(-2) ?? '{}')).toEqual({
      error: {
        message: 'The model took too long to answer.',
        type: 'server_error',
        param: null,
        code: 'model_timeout',
      },
    });

    llm.enqueue(fault());
    started = Date.now();
    const error = await client(TOKEN)
      .chat.completions.create({
        model: 'parley',
        messages: [{ role: 'user', content: 'Again.' }],
        user: 'patient',
      })
      .catch((e: unknown) => e);
    waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(1_900);
    expect(waited).toBeLessThan(10_000);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect((error as APIError).status).toBe(500);
    expect((error as APIError).error).toEqual({
      message: 'The model took too long to answer.',
      type: 'server_error',
      param: null,
      code: 'model_timeout',
    });
  });

  it('stops the model at once when the client aborts mid-stream', async () => {
    llm.enqueue(reply.text('a b c d e f g h', { delayMs: 150 }));
    const controller = new AbortController();
    const stream = await client(aliceKey).chat.completions.create(
      { model: 'parley', messages: [{ role: 'user', content: 'Slowly.' }], stream: true },
      { signal: controller.signal },
    );
    // The SDK ends the iteration quietly once its own signal aborted.
    let received = '';
    await (async () => {
      for await (const chunk of stream) {
        received += chunk.choices[0]?.delta.content ?? '';
        if (received) controller.abort();
      }
    })().catch(() => {});
    expect(received).toMatch(/^a/);
    expect((await llm.waitForClientClose(5_000)).outcome).toBe('client-closed');
  });

  // /chat's disconnect rule (test/http/chat.test.ts), for a completion not streamed: the
  // client leaving stops the model, the partial answer is kept, the user's turn is let go.
  it('stops the model when the client leaves a non-streamed completion, and keeps the partial answer', async () => {
    llm.enqueue(reply.text('a b c d e f g h i j k l', { delayMs: 150 }));
    const controller = new AbortController();
    const pending = client(TOKEN)
      .chat.completions.create(
        { model: 'parley', messages: [{ role: 'user', content: 'Slowly.' }], user: 'leaver' },
        { signal: controller.signal },
      )
      .catch((e: unknown) => e);
    await expect.poll(() => llm.chats.length).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 500)); // a few words are out
    controller.abort();
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
    expect((await llm.waitForClientClose(5_000)).outcome).toBe('client-closed');

    // The run is kept as interrupted, with what was answered before the client left.
    await expect
      .poll(async () => {
        const exported = (await (await admin('/users/leaver/export', 'GET')).json()) as {
          runs: Array<{ status: string; answer: string | null }>;
        };
        return exported.runs;
      })
      .toEqual([
        expect.objectContaining({ status: 'interrupted', answer: expect.stringMatching(/^a b/) }),
      ]);
    // The user's turn was let go: the next completion is answered at once.
    llm.enqueue(reply.text('Back again.'));
    const next = await client(TOKEN).chat.completions.create({
      model: 'parley',
      messages: [{ role: 'user', content: 'Hello?' }],
      user: 'leaver',
    });
    expect(next.choices[0]?.message.content).toBe('Back again.');
  });

  it('lets the administrator act for the user named in `user`', async () => {
    await admin('/users/carol/profile', 'PUT', { display_name: 'Carol Example' });
    llm.enqueue(reply.text('Hello Carol.'));
    await client(TOKEN).chat.completions.create({
      model: 'parley',
      messages: [{ role: 'user', content: 'Who am I?' }],
      user: 'carol',
    });
    expect(String(modelRequest(0)[0]?.content)).toContain('Carol Example');
  });
});

/**
 * The streams recorded from OpenAI's own API (../shared/data/SOURCES.md): the three of
 * openai-python (2024, `.sse` verbatim, the reference), and those of the AI SDK's fixtures
 * that came from api.openai.com (2025-26: `service_tier` and `obfuscation` say so; Azure's
 * and other providers' are not OpenAI's own).
 */
const OPENAI_RECORDINGS = [
  ...readdirSync(RECORDED)
    .filter((file) => file.endsWith('.sse'))
    .sort()
    .map((file) => `openai/${file}`),
  'vercel-ai/openai__openai-text.chunks.txt',
  'vercel-ai/openai-compatible__issue-15789-step-1.chunks.txt',
  'vercel-ai/openai-compatible__issue-15789-step-2.chunks.txt',
];

type Chunk = {
  id?: string;
  object?: string;
  choices?: Array<{ index?: number; delta?: Record<string, unknown>; finish_reason?: unknown }>;
  usage?: unknown;
  [key: string]: unknown;
};

function readRecording(name: string): { chunks: Chunk[]; raw?: string; dated: boolean } {
  const text = readFileSync(join(RECORDED, '..', name), 'utf8');
  if (name.endsWith('.sse')) {
    const lines = dataLines(text);
    expect(lines.at(-1)).toBe('[DONE]');
    return {
      chunks: lines.slice(0, -1).map((line) => JSON.parse(line) as Chunk),
      raw: text,
      dated: false,
    };
  }
  const chunks = text
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Chunk);
  // Only api.openai.com sends these; a recording without them is not OpenAI's own.
  expect(chunks.every((chunk) => 'service_tier' in chunk && 'obfuscation' in chunk)).toBe(true);
  return { chunks, dated: true };
}

/**
 * The fields OpenAI added after the reference recordings, which Parley does not send: its
 * `service_tier`, the `obfuscation` padding, `usage: null` on every chunk, and the usage
 * details of features Parley has not (cached prompts, audio, predicted outputs). Only these
 * are removed, and only from the later recordings.
 */
function laterFieldsRemoved(chunk: Chunk, dated: boolean): Chunk {
  if (!dated) return chunk;
  const { service_tier: _tier, obfuscation: _padding, usage, ...rest } = chunk;
  if (usage === null || usage === undefined) return rest;
  const {
    prompt_tokens_details: _prompt,
    completion_tokens_details,
    ...counts
  } = usage as Record<string, unknown>;
  const { reasoning_tokens } = completion_tokens_details as { reasoning_tokens: number };
  return { ...rest, usage: { ...counts, completion_tokens_details: { reasoning_tokens } } };
}

/** What a chunk is: the role chunk, a content delta, a tool call, the finish chunk, or usage. */
function kindOf(chunk: Chunk): string {
  const [choice] = chunk.choices ?? [];
  if (!choice) return 'usage';
  if (choice.finish_reason !== null) return 'finish';
  if (choice.delta && 'role' in choice.delta) return 'role';
  if (choice.delta && 'tool_calls' in choice.delta) return 'tool_calls';
  return 'content';
}

function dataLines(body: string): string[] {
  return body
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice('data: '.length));
}

/** The fields of a JSON value and their types, recursively; values themselves do not matter. */
function shapeOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shapeOf);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, inner]) => [key, shapeOf(inner)]),
    );
  }
  return value === null ? 'null' : typeof value;
}

import { readdirSync } from 'node:fs';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { extractReasoningMiddleware, wrapLanguageModel } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coalesceEvents, createSseBurstMerger } from '../../src/models/coalesce-sse-bursts.ts';
import type { BodyTransform } from '../../src/models/http-fetch.ts';
import {
  createEventBound,
  MODEL_EVENT_MAX_BYTES,
  ModelEventTooLargeError,
} from '../../src/models/model-event-bound.ts';
import { createOpenAICompatibleModel } from '../../src/models/openai-compatible-model.ts';
import { recordingsDir } from '../support/fake-llm/recording.ts';
import { type FakeLlmServer, reply, startFakeLlmServer } from '../support/fake-llm-server.ts';

const chunk = (delta: object, extra: object = {}) =>
  `data: ${JSON.stringify({
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: null }],
    ...extra,
  })}`;
const contentOf = (event: string) =>
  (JSON.parse(event.slice(6)) as { choices: [{ delta: Record<string, unknown> }] }).choices[0]
    .delta;

describe('coalesceEvents', () => {
  it('merges consecutive content deltas into one, keeping the first chunk’s fields', () => {
    const merged = coalesceEvents([
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: '안녕' }, { obfuscation: 'xx' }),
      chunk({ content: '하세요 "quoted" \\ \n' }),
    ]);
    expect(merged).toHaveLength(1);
    expect(contentOf(merged[0] as string)).toEqual({
      role: 'assistant',
      content: '안녕하세요 "quoted" \\ \n',
    });
  });

  it('merges reasoning deltas, but never reasoning with content', () => {
    const merged = coalesceEvents([
      chunk({ reasoning_content: 'think ', content: null }),
      chunk({ reasoning_content: 'more', content: null }),
      chunk({ content: 'Answer' }),
      chunk({ content: '!' }),
    ]);
    expect(merged.map(contentOf)).toEqual([
      { reasoning_content: 'think more', content: null },
      { content: 'Answer!' },
    ]);
  });

  it('passes every other event through verbatim and in order', () => {
    const events = [
      chunk({ content: 'a' }),
      chunk({
        tool_calls: [{ index: 0, id: 't', type: 'function', function: { arguments: '{' } }],
      }),
      chunk({ content: 'b' }),
      chunk({ content: 'c' }, { usage: { prompt_tokens: 1 } }), // usage: the last one counts
      chunk({ content: 'd' }, { citations: ['x'] }), // a field this code does not know
      `data: ${JSON.stringify({ id: 'c1', model: 'm', choices: [{ index: 0, delta: { content: 'e' }, finish_reason: 'stop' }] })}`,
      chunk({ content: 'f' }, { id: 'other-completion' }),
      chunk({ content: 'g' }),
      ': keep-alive comment',
      'data: {"broken',
      'event: message\ndata: {"multi":"line"}',
      'data: [DONE]',
    ];
    expect(coalesceEvents(events)).toEqual(events);
  });

  it('keeps a lone delta byte for byte (no re-serialising)', () => {
    const event = 'data:{"id":"c1","choices":[{"index":0,"delta":{"content":"\\u00e9"}}]}';
    expect(coalesceEvents([event, 'data: [DONE]'])).toEqual([event, 'data: [DONE]']);
  });
});

/** The bytes the merger passes on when the body arrives in these reads. */
function throughBursts(reads: Uint8Array[]): { text: string; reads: number } {
  const merger = createSseBurstMerger();
  const out = [...reads.map((read) => merger.chunk(Buffer.from(read))), merger.end()].filter(
    (bytes): bytes is Uint8Array => bytes !== undefined,
  );
  return { text: new TextDecoder().decode(Buffer.concat(out)), reads: out.length };
}

/** The text deltas of an SSE body, joined. */
const deltasOf = (body: string) =>
  body
    .split('\n\n')
    .filter((event) => event.startsWith('data: {'))
    .map((event) => contentOf(event).content)
    .join('');

describe('the burst merger on a body cut into reads anywhere', () => {
  const events = ['안녕', '하세요', ' 😀 ', 'é', '끝'].map((text) => chunk({ content: text }));
  const body = new TextEncoder().encode(`${events.join('\n\n')}\n\ndata: [DONE]\n\n`);

  it('says the same whatever byte a read ends on, even inside a character', async () => {
    for (let cut = 1; cut < body.length; cut++) {
      const { text } = throughBursts([body.subarray(0, cut), body.subarray(cut)]);
      expect(deltasOf(text)).toBe('안녕하세요 😀 é끝');
      expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    }
  });

  it('passes one whole event a read on unchanged, and merges a burst', async () => {
    const eventReads = [...events, 'data: [DONE]'].map((e) => new TextEncoder().encode(`${e}\n\n`));
    const paced = throughBursts(eventReads);
    expect(paced.text).toBe(new TextDecoder().decode(body));
    expect(paced.reads).toBe(eventReads.length);
    const burst = throughBursts([body]);
    expect(burst.reads).toBe(1);
    expect(burst.text.split('\n\n').filter(Boolean)).toHaveLength(2); // one delta, [DONE]
    expect(deltasOf(burst.text)).toBe('안녕하세요 😀 é끝');
  });
});

/**
 * Both body readers (the burst merger for event streams, the bound alone for other bodies)
 * take events of any number under MODEL_EVENT_MAX_BYTES each, in every framing SSE allows,
 * and stop at one over it. test/http/model-event-bound.test.ts shows what the user sees.
 */
describe('how large an event the model server’s body readers take', () => {
  const readers = { 'burst merger': createSseBurstMerger, 'bound alone': createEventBound };
  const framings = { '\\n': '\n', '\\r\\n': '\r\n', '\\r': '\r' };
  const cases = Object.entries(readers).flatMap(([reader, make]) =>
    Object.entries(framings).map(([framing, newline]) => ({ reader, make, framing, newline })),
  );
  /** Feeds the body in reads of 64 KiB; throws what the reader throws. */
  const read = (make: () => BodyTransform, body: string) => {
    const reader = make();
    const bytes = Buffer.from(body);
    for (let at = 0; at < bytes.length; at += 65_536) {
      reader.chunk(bytes.subarray(at, at + 65_536));
    }
    reader.end();
  };

  it.each(cases)(
    'the $reader takes events just under it, framed with $framing',
    ({ make, newline }) => {
      const justUnder = `data: ${'a'.repeat(MODEL_EVENT_MAX_BYTES - 8)}${newline}${newline}`;
      const small = `data: {"x":1}${newline}${newline}`;
      expect(() => read(make, justUnder.repeat(3) + small.repeat(1000))).not.toThrow();
    },
  );

  it.each(cases)(
    'the $reader stops at an event over it, framed with $framing',
    ({ make, newline }) => {
      const oneLine = `data: ${'a'.repeat(MODEL_EVENT_MAX_BYTES)}`;
      expect(() => read(make, oneLine)).toThrow(ModelEventTooLargeError);
      const manyLines = `data: ${'a'.repeat(1000)}${newline}`.repeat(MODEL_EVENT_MAX_BYTES / 1000);
      expect(() => read(make, `data: {}${newline}${newline}${manyLines}`)).toThrow(
        ModelEventTooLargeError,
      );
    },
  );
});

/**
 * Every recorded provider stream, replayed at once (one burst, so it is coalesced), read
 * through Parley's model adapter and through the AI SDK provider on its own: what the model
 * said must be identical, only cut into fewer pieces.
 */
describe('Parley’s model adapter on recorded provider streams', () => {
  let llm: FakeLlmServer;
  const recordings = readdirSync(recordingsDir).filter((name) => name !== 'index.json');
  let deltasWithout = 0;
  let deltasWith = 0;

  beforeAll(async () => {
    llm = await startFakeLlmServer();
  });
  afterAll(async () => {
    await llm?.close();
  });

  it.each(recordings)('%s says the same with and without merging', async (file) => {
    const plain = wrapLanguageModel({
      model: createOpenAICompatible({
        name: 'llm',
        baseURL: llm.url,
        includeUsage: true,
      }).chatModel('m'),
      middleware: extractReasoningMiddleware({ tagName: 'think' }),
    });
    const ours = (await createOpenAICompatibleModel({
      baseURL: llm.url,
      model: 'm',
    }).get()) as LanguageModelV4;

    llm.enqueue(reply.replay(file), reply.replay(file));
    const without = await said(plain);
    const withMerging = await said(ours);
    llm.assertNoUnexpected();

    expect(withMerging.said).toEqual(without.said);
    expect(withMerging.deltas).toBeLessThanOrEqual(without.deltas);
    deltasWithout += without.deltas;
    deltasWith += withMerging.deltas;
  });

  it('needed far fewer deltas for the same words', () => {
    expect(deltasWithout).toBeGreaterThan(1_000);
    expect(deltasWith).toBeLessThan(deltasWithout / 5);
  });
});

async function said(model: LanguageModelV4) {
  const { stream } = await model.doStream({
    prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  });
  const result = {
    text: '',
    reasoning: '',
    toolCalls: [] as unknown[],
    finish: undefined as unknown,
    errors: [] as string[],
  };
  let deltas = 0;
  for await (const part of stream) {
    if (part.type === 'text-delta') result.text += part.delta;
    if (part.type === 'reasoning-delta') result.reasoning += part.delta;
    if (part.type === 'text-delta' || part.type === 'reasoning-delta') deltas++;
    if (part.type === 'tool-call')
      result.toolCalls.push({ name: part.toolName, input: part.input });
    if (part.type === 'finish') result.finish = { reason: part.finishReason, usage: part.usage };
    if (part.type === 'error') result.errors.push(String(part.error));
  }
  return { said: result, deltas };
}

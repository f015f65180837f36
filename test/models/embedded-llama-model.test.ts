import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEmbeddedLlamaModel } from '../../src/models/embedded-llama-model.ts';
import {
  createLlamaModelLoader,
  type LlamaModelLoader,
} from '../../src/models/llama/llama-model-loader.ts';
import { ModelUnavailableError } from '../../src/models/model-download.ts';
import { writeTinyGguf } from '../support/tiny-gguf/make-tiny-gguf.ts';
import { toolCallScript } from '../support/tiny-gguf/tool-call-script.ts';

// Real llama.cpp (node-llama-cpp's prebuilt CPU binary) on tiny generated
// GGUFs whose greedy output is scripted, driven through the AI SDK exactly as
// the app drives it.

const THOUGHT = 'The user greets me in Korean.';
const ANSWER = 'Hello from tiny llama! 반가워요.';

const logger = pino({ level: 'silent' });
const loaders: LlamaModelLoader[] = [];
let dir: string;

function embedded(file: string) {
  // One thread: llama.cpp's threads spin-wait on each other, and CI's two
  // cores are shared with other test files.
  const loader = createLlamaModelLoader({
    modelPath: join(dir, file),
    logger,
    threads: 1,
    contextSize: 2048,
  });
  loaders.push(loader);
  return createEmbeddedLlamaModel({ loader, modelId: file });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'parley-tiny-llama-'));
  await writeTinyGguf(join(dir, 'chat.gguf'), {
    script: `<think>\n${THOUGHT}\n</think>\n\n${ANSWER}`,
  });
  await writeTinyGguf(join(dir, 'tool.gguf'), {
    script: toolCallScript('get_weather', { city: 'Seoul' }),
  });
  await writeTinyGguf(join(dir, 'endless.gguf'), { script: 'and on, ', loop: true });
});

afterAll(async () => {
  for (const loader of loaders) await loader.dispose();
  await rm(dir, { recursive: true, force: true });
});

describe('embedded llama model through the AI SDK', () => {
  const chatModel = () => embedded('chat.gguf');
  let chat: ReturnType<typeof chatModel>;
  beforeAll(() => {
    chat = chatModel();
  });

  it('streams the answer as several text deltas, and the thought as reasoning', async () => {
    const result = streamText({ model: chat, prompt: '안녕하세요!' });
    const types: string[] = [];
    const textDeltas: string[] = [];
    let reasoning = '';
    for await (const part of result.fullStream) {
      types.push(part.type);
      if (part.type === 'text-delta') textDeltas.push(part.text);
      if (part.type === 'reasoning-delta') reasoning += part.text;
    }
    expect(textDeltas.length).toBeGreaterThan(3);
    expect(textDeltas.join('')).toBe(ANSWER);
    expect(await result.text).toBe(ANSWER);
    expect(reasoning.trim()).toBe(THOUGHT);
    // Blocks are well-formed: reasoning closes before the text opens.
    const order = types.filter((t) => /^(reasoning|text)-(start|end)$/.test(t));
    expect(order).toEqual(['reasoning-start', 'reasoning-end', 'text-start', 'text-end']);
    expect(await result.finishReason).toBe('stop');
    const usage = await result.usage;
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeGreaterThan(textDeltas.length);
  });

  it('answers through doGenerate too', async () => {
    const result = await generateText({ model: chat, system: 'Be brief.', prompt: 'Hi' });
    expect(result.text).toBe(ANSWER);
    expect(result.reasoningText?.trim()).toBe(THOUGHT);
    expect(result.finishReason).toBe('stop');
  });

  it('generates no more than its cap, even when a call asks for more', async () => {
    // An OpenAI-compatible client's max_tokens reaches the model as maxOutputTokens: the cap
    // keeps a looping model from holding the CPU whatever a client asks.
    const loader = createLlamaModelLoader({
      modelPath: join(dir, 'endless.gguf'),
      logger,
      threads: 1,
      contextSize: 2048,
    });
    loaders.push(loader);
    const capped = createEmbeddedLlamaModel({ loader, defaultMaxOutputTokens: 16 });
    for (const maxOutputTokens of [100_000, undefined]) {
      const result = await generateText({ model: capped, prompt: 'Go on.', maxOutputTokens });
      expect(result.finishReason).toBe('length');
      expect(result.usage.outputTokens).toBe(16);
    }
    const fewer = await generateText({ model: capped, prompt: 'Go on.', maxOutputTokens: 5 });
    expect(fewer.usage.outputTokens).toBe(5);
  });

  it('stops generating at once when the abort signal fires', async () => {
    const endless = embedded('endless.gguf');
    const abort = new AbortController();
    const result = streamText({
      model: endless,
      prompt: 'Go on forever.',
      abortSignal: abort.signal,
      maxOutputTokens: 100_000,
    });
    let deltas = 0;
    let abortedAt = 0;
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta' && ++deltas === 5) {
        abortedAt = Date.now();
        abort.abort();
      }
    }
    expect(Date.now() - abortedAt).toBeLessThan(1_000);
    expect(deltas).toBeLessThan(50);

    // The model has one sequence: this call only gets it once the aborted
    // generation has really stopped (not merely stopped being read).
    const started = Date.now();
    const next = await generateText({ model: endless, prompt: 'Again.', maxOutputTokens: 12 });
    expect(next.finishReason).toBe('length');
    expect(next.text.startsWith('and on, and on')).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('surfaces a function call as a tool call that the AI SDK validates and executes', async () => {
    const model = embedded('tool.gguf');
    const executed: unknown[] = [];
    const result = streamText({
      model,
      prompt: '서울 날씨 어때?',
      stopWhen: stepCountIs(2),
      tools: {
        get_weather: tool({
          description: 'Current weather for a city',
          inputSchema: z.object({ city: z.string().min(1) }),
          execute: async (input) => {
            executed.push(input);
            return { city: input.city, celsius: 21 };
          },
        }),
      },
    });
    const steps = await result.steps;
    const first = steps[0];
    expect(first?.finishReason).toBe('tool-calls');
    expect(first?.toolCalls).toHaveLength(1);
    expect(first?.toolCalls[0]).toMatchObject({
      toolName: 'get_weather',
      input: { city: 'Seoul' },
    });
    expect(first?.toolCalls[0]?.toolCallId).toEqual(expect.any(String));
    expect(first?.toolResults[0]?.output).toEqual({ city: 'Seoul', celsius: 21 });
    expect(executed[0]).toEqual({ city: 'Seoul' });
    // The tool loop ran a second step (this model is scripted to call again),
    // and that step reused the evaluated prompt instead of reading it anew.
    expect(steps).toHaveLength(2);
    expect(steps[1]?.usage.inputTokens).toBeLessThan(first?.usage.inputTokens ?? 0);
  });

  it('reports an unavailable model as the typed error from the loader', async () => {
    const loader = createLlamaModelLoader({
      modelPath: async () => {
        throw new ModelUnavailableError('no model here; set LLM_MODEL_PATH or LLM_BASE_URL');
      },
      logger,
    });
    const model = createEmbeddedLlamaModel({ loader });
    const errors: unknown[] = [];
    const result = streamText({ model, prompt: 'Hi', onError: ({ error }) => errors.push(error) });
    await result.consumeStream();
    expect(errors[0]).toBeInstanceOf(ModelUnavailableError);
  });
});

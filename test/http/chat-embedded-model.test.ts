import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { writeTinyGguf } from '../support/tiny-gguf/make-tiny-gguf.ts';

const THOUGHT = 'The user greets me in Korean.';
const ANSWER = 'Hello from tiny llama! 반가워요.';

const ask = async (parley: RunningParley, body: Record<string, unknown>) =>
  readChat(
    await parley.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );

describe('POST /chat with the embedded llama.cpp model (a tiny generated GGUF)', () => {
  let dir: string;
  let parley: RunningParley;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-embedded-model-'));
    await writeTinyGguf(join(dir, 'tiny.gguf'), {
      script: `<think>\n${THOUGHT}\n</think>\n\n${ANSWER}`,
    });
    parley = await startParley({
      env: { LLM_MODEL_PATH: join(dir, 'tiny.gguf'), LLM_THREADS: '1' },
    });
  });
  afterAll(async () => {
    await parley?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('loads the model on first use and streams its answer token by token', async () => {
    const stream = await ask(parley, { message: '안녕', user_id: 'tiny' });
    expect(stream.error).toBeUndefined();
    expect(stream.text).toBe(ANSWER);
    expect(stream.fragments.length).toBeGreaterThan(3);
    expect(stream.runId).toBeDefined();
    expect(stream.ended).toBe(true);
  });

  it('shows its reasoning inside <think> when asked', async () => {
    const stream = await ask(parley, {
      message: '안녕',
      user_id: 'tiny-thinking',
      show_thinking: true,
    });
    expect(stream.text).toMatch(
      new RegExp(`^<think>\\s*${THOUGHT}\\s*</think>${ANSWER.replace(/[.!]/g, '\\$&')}$`),
    );
  });
});

describe('POST /chat when the embedded model cannot be had', () => {
  let parley: RunningParley | undefined;
  afterAll(async () => {
    await parley?.stop();
  });

  it('says how to configure a model when the download fails, and keeps serving', async () => {
    parley = await startParley({ env: { LLM_MODEL: 'http://127.0.0.1:1/model.gguf' } });
    const started = Date.now();
    const stream = await ask(parley, { message: 'hello' });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(stream.error?.code).toBe('model_not_configured');
    expect(stream.error?.message).toMatch(/LLM_MODEL_PATH/);
    expect(stream.error?.message).toMatch(/LLM_BASE_URL/);
    expect(stream.ended).toBe(true);
    expect((await parley.fetch('/health')).status).toBe(200);
  });
});

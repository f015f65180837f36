import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { type FakeFileServer, serveFile } from '../support/fake-file-server.ts';
import {
  noneOverlaps,
  rangesFetched,
  waitForSavedChunks,
} from '../support/model-download/partial-progress.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { buildTinyGguf, writeTinyGguf } from '../support/tiny-gguf/make-tiny-gguf.ts';

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

/** The child processes of `pid` (Linux). */
const childrenOf = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
};

/** node-llama-cpp's test of the llama.cpp binary, a child it forks at each load on Linux. */
const isBinaryTest = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').includes('TEST_BINDING_CP=true');
  } catch {
    return false;
  }
};

// node-llama-cpp forks a process to test the llama.cpp binary before loading it, and listens
// for no 'error' on it: its message to a test process that had just died (killed, out of
// memory) failed with EPIPE unheard, and Node ended Parley on the first chat.
describe('POST /chat when the llama.cpp binary test process dies', () => {
  let dir: string;
  let parley: RunningParley;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-binary-test-dies-'));
    await writeTinyGguf(join(dir, 'tiny.gguf'), { script: ANSWER });
    parley = await startParley({
      env: { LLM_MODEL_PATH: join(dir, 'tiny.gguf'), LLM_THREADS: '1' },
    });
  });
  afterAll(async () => {
    if (parley?.process.pid) {
      try {
        process.kill(parley.process.pid, 'SIGCONT');
      } catch {
        // gone already
      }
    }
    await parley?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fails that load only, keeps serving, and the next chat loads the model', async () => {
    const pid = parley.process.pid as number;
    const first = ask(parley, { message: 'hello', user_id: 'binary-test' }).catch(
      (error: Error) => ({ error: { code: 'no answer', message: error.message } }),
    );
    let tester: number | undefined;
    for (const deadline = Date.now() + 20_000; !tester && Date.now() < deadline; ) {
      tester = childrenOf(pid).find(isBinaryTest);
      if (!tester) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(tester).toBeDefined();
    // Parley is held while the test process says it is ready and is killed: it reads that
    // message before the end of the process's channel, and answers a process already gone.
    process.kill(pid, 'SIGSTOP');
    try {
      await sleep(1_500);
      process.kill(tester as number, 'SIGKILL');
      await sleep(300);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const failed = await first;
    await sleep(500);
    expect(parley.process.exitCode, parley.output().slice(-1_500)).toBeNull();
    expect(failed.error?.code).toBe('model_not_configured');
    await parley.waitForLog((line) => line.code === 'child_process_failed');

    const next = await ask(parley, { message: 'hello again', user_id: 'binary-test' });
    expect(next.error).toBeUndefined();
    expect(next.text).toBe(ANSWER);
  }, 60_000);
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

describe('POST /chat while the embedded model is being downloaded', () => {
  const CHUNK = 5 * 1024 * 1024; // node-llama-cpp's download chunk
  let dataDir: string;
  let host: FakeFileServer;
  let parley: RunningParley | undefined;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'parley-model-restart-'));
  });
  afterAll(async () => {
    await parley?.stop();
    await host?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('stops at once on SIGTERM, and resumes the download after the restart', async () => {
    const model = buildTinyGguf({ script: ANSWER, paddingBytes: 2 * CHUNK + 4_321 });
    // The first ranged GET stalls in the second chunk; the others arrive on parallel ones.
    host = await serveFile(model, { faultAt: CHUNK + 1_000_000, fault: 'stall' });
    const env = { LLM_MODEL: host.url, LLM_THREADS: '1', SHUTDOWN_GRACE_MS: '300' };
    parley = await startParley({ dataDir, env });

    const waiting = ask(parley, { message: 'hello', user_id: 'early' });
    const partial = join(dataDir, 'models', 'tiny.gguf.ipull');
    const { done, chunkSize } = await waitForSavedChunks(partial, model.length);
    const stopping = Date.now();
    expect(await parley.stop('SIGTERM')).toBe(0);
    expect(Date.now() - stopping).toBeLessThan(5_000);
    // The chat that was waiting for the model was told why it stopped.
    const early = await waiting;
    expect(early.error?.code).toBe('shutting_down');
    expect(early.ended).toBe(true);
    expect(readdirSync(join(dataDir, 'models')).sort()).toEqual([
      'tiny.gguf.download.json',
      'tiny.gguf.ipull',
    ]);

    const before = host.requests.length;
    parley = await startParley({ dataDir, env });
    const stream = await ask(parley, { message: 'hello again', user_id: 'later' });
    expect(stream.error).toBeUndefined();
    expect(stream.text).toBe(ANSWER);
    const resumed = await parley.waitForLog((line) => line.msg === 'model download resumed');
    expect(resumed.resumedFrom).toBeGreaterThan(0); // it did not start from byte 0
    const fetched = rangesFetched(host.requests.slice(before));
    expect(fetched.length).toBeGreaterThan(0);
    expect(noneOverlaps(fetched, done, chunkSize)).toBe(true);
  });
});

describe('conversation memory with the embedded llama.cpp model', () => {
  // The scripted model says the same whatever it is asked: as a chat answer, and as the
  // memory decision, where the schema's grammar constrains it (and lets it through).
  const DECISION = '{"remember": true, "memory": "The user drinks green tea."}';
  let dir: string;
  let parley: RunningParley;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-embedded-memory-'));
    await writeTinyGguf(join(dir, 'tiny.gguf'), { script: DECISION });
    parley = await startParley({
      env: { LLM_MODEL_PATH: join(dir, 'tiny.gguf'), LLM_THREADS: '1', CONV_RAG_ENABLED: '1' },
    });
  });
  afterAll(async () => {
    await parley?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('decides through the embedded model’s structured output, and keeps the memory', async () => {
    const stream = await ask(parley, { message: 'I only drink green tea.', user_id: 'tea' });
    expect(stream.error).toBeUndefined();
    const decided = await parley.waitForLog(
      (line) => line.msg === 'memory decided' && line.runId === stream.runId,
      60_000,
    );
    expect(decided.remembered).toBe(true);
    const listed = await (await parley.fetch('/users/tea/memories')).json();
    expect(listed).toMatchObject({ memories: [{ text: 'The user drinks green tea.' }] });
  });
});

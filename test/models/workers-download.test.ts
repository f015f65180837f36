import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { type FakeFileServer, serveFile } from '../support/fake-file-server.ts';
import {
  noneOverlaps,
  rangesFetched,
  waitForSavedChunks,
} from '../support/model-download/partial-progress.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres-server.ts';
import { type LogLine, type RunningParley, startParley } from '../support/start-parley.ts';
import { buildTinyGguf } from '../support/tiny-gguf/make-tiny-gguf.ts';

const ANSWER = 'Ready when you are.';
const CHUNK = 5 * 1024 * 1024; // node-llama-cpp's download chunk

const listening = (line: LogLine) => line.msg === 'Parley is listening';

/**
 * PARLEY_WORKERS without a model server (allowed, with a warning): every worker loads the
 * embedded model, and all of them find it in the one DATA_DIR/models. They must not download
 * it into the same files at once: one downloads, the others wait for its file.
 * (Workers need a PostgreSQL server: this runs on the server engine only.)
 */
describe('the embedded model with PARLEY_WORKERS=2', () => {
  let database: TestDatabase | undefined;
  let host: FakeFileServer | undefined;
  let parley: RunningParley | undefined;
  afterAll(async () => {
    await parley?.stop();
    await host?.close();
    await database?.drop();
  });

  it('is downloaded once into the shared models folder, and every worker then answers with it', async () => {
    database = await createTestDatabase();
    const model = buildTinyGguf({ script: ANSWER, paddingBytes: 2 * CHUNK + 4_321 });
    host = await serveFile(model);
    parley = await startParley({
      env: {
        PARLEY_WORKERS: '2',
        DATABASE_URL: database.url,
        EMBEDDINGS_PROVIDER: 'none',
        LLM_MODEL: host.url,
        LLM_THREADS: '1',
      },
    });
    const running = parley;
    const first = running.logs.find(listening)?.pid;
    await running.waitForLog((line) => listening(line) && line.pid !== first, 60_000);

    // Every worker says its model is ready: the kernel hands connections to them in turn,
    // so eight ready answers in a row came from both.
    let readyInARow = 0;
    const deadline = Date.now() + 90_000;
    while (readyInARow < 8) {
      if (Date.now() > deadline) throw new Error('the workers did not all get the model');
      const health = (await (await running.fetch('/health')).json()) as {
        model: { state: string; reason?: string };
      };
      expect(health.model.reason).toBeUndefined();
      expect(health.model.state).not.toBe('failed');
      readyInARow = health.model.state === 'ready' ? readyInARow + 1 : 0;
      if (readyInARow === 0) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await running.settled();
    expect(running.logs.filter((line) => line.msg === 'model download started')).toHaveLength(1);
    const files = readdirSync(join(running.dataDir, 'models')).sort();
    expect(files.filter((name) => name.endsWith('.ipull'))).toEqual([]);

    for (let i = 0; i < 4; i++) {
      const chat = await readChat(
        await running.fetch('/chat', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'hello?', user_id: `worker-user-${i}` }),
        }),
      );
      expect(chat.error).toBeUndefined();
      expect(chat.text).toBe(ANSWER);
    }
  });

  it('stops at SIGTERM while one worker downloads and the other waits for it, and the next start resumes', async () => {
    await parley?.stop();
    await host?.close();
    const fresh = await createTestDatabase();
    const model = buildTinyGguf({ script: ANSWER, paddingBytes: 3 * CHUNK + 1_234 });
    // The first ranged GET stalls in the second chunk: the download cannot finish on its own.
    const stalling = await serveFile(model, { faultAt: CHUNK + 1_000_000, fault: 'stall' });
    host = stalling;
    const env = {
      PARLEY_WORKERS: '2',
      DATABASE_URL: fresh.url,
      EMBEDDINGS_PROVIDER: 'none',
      LLM_MODEL: stalling.url,
      LLM_THREADS: '1',
      SHUTDOWN_GRACE_MS: '2000',
    };
    // A data directory of the test's own: stop() removes the one it makes.
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-workers-download-'));
    try {
      const first = await startParley({ env, dataDir });
      parley = first;
      const downloading = await first.waitForLog(
        (line) => line.msg === 'model download started',
        60_000,
      );
      const waiting = await first.waitForLog(
        (line) =>
          line.msg ===
          'another process is getting the embedded model into this folder: waiting for it',
        60_000,
      );
      expect(waiting.pid).not.toBe(downloading.pid);
      const models = join(first.dataDir, 'models');
      // Some chunks are saved beside the stalled one before the stop.
      const saved = await waitForSavedChunks(join(models, 'tiny.gguf.ipull'), model.length);
      expect(saved.done.length).toBeGreaterThan(0);

      const stoppingAt = Date.now();
      expect(await first.stop('SIGTERM')).toBe(0);
      // Neither the download nor the wait holds the shutdown past its grace.
      expect(Date.now() - stoppingAt).toBeLessThan(2_000 + 8_000);
      const alive = (pid: unknown) => {
        try {
          process.kill(pid as number, 0);
          return true;
        } catch {
          return false;
        }
      };
      expect([downloading.pid, waiting.pid].filter(alive)).toEqual([]);
      expect(readdirSync(models).sort()).toEqual(['tiny.gguf.download.json', 'tiny.gguf.ipull']);

      // Started again on the same folder (the host's fault happened once): it resumes.
      const before = stalling.requests.length;
      const second = await startParley({ env, dataDir });
      parley = second;
      await second.waitForLog((line) => line.msg === 'model download finished', 90_000);
      expect(second.logs.filter((line) => line.msg === 'model download started')).toEqual([]);
      expect(second.logs.filter((line) => line.msg === 'model download resumed')).toHaveLength(1);
      // The chunks saved before the stop were not fetched again.
      const fetched = rangesFetched(stalling.requests.slice(before));
      expect(fetched.length).toBeGreaterThan(0);
      expect(noneOverlaps(fetched, saved.done, saved.chunkSize)).toBe(true);
      const chat = await readChat(
        await second.fetch('/chat', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'hello?', user_id: 'after-restart' }),
        }),
      );
      expect(chat.error).toBeUndefined();
      expect(chat.text).toBe(ANSWER);
      await second.stop();
    } finally {
      await parley?.stop();
      rmSync(dataDir, { recursive: true, force: true });
      await fresh.drop();
    }
  });
});

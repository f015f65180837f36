import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureModel, ModelUnavailableError } from '../../src/models/model-download.ts';
import { type FakeFileServer, serveFile } from '../support/fake-file-server.ts';
import {
  noneOverlaps,
  rangesFetched,
  waitForSavedChunks,
} from '../support/model-download/partial-progress.ts';
import { buildTinyGguf } from '../support/tiny-gguf/make-tiny-gguf.ts';

// The download path runs for real: node-llama-cpp's downloader against a local
// HTTP server, on a generated GGUF. Nothing leaves 127.0.0.1.

const CHUNK = 5 * 1024 * 1024; // the downloader's chunk size: it resumes per chunk

function captureLogger() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

let model: Uint8Array; // over two chunks: the downloader fetches them on parallel connections
const cleanup: (() => Promise<void>)[] = [];

beforeAll(() => {
  model = buildTinyGguf({ script: 'Hello from tiny llama', paddingBytes: 2 * CHUNK + 12_345 });
});

afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'parley-models-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function server(...args: Parameters<typeof serveFile>): Promise<FakeFileServer> {
  const s = await serveFile(...args);
  cleanup.push(s.close);
  return s;
}

/**
 * Downloads `uri` into `dir` in a child process, killed (SIGKILL) once the partial file records
 * a finished chunk, so there is something to resume; resolves with the chunks it recorded.
 */
async function killMidDownload(uri: string, dir: string) {
  const child = spawn(
    process.execPath,
    [new URL('../support/model-download/download-child.ts', import.meta.url).pathname, uri, dir],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const exited = once(child, 'exit');
  const saved = await waitForSavedChunks(join(dir, 'tiny.gguf.ipull'), model.length);
  child.kill('SIGKILL');
  await exited;
  return saved;
}

describe('ensureModel', () => {
  it('fails fast with a typed error telling the operator what to set when the host is unreachable', async () => {
    const { logger } = captureLogger();
    const started = Date.now();
    const error = await ensureModel({
      uri: 'http://127.0.0.1:1/model.gguf',
      dir: await tempDir(),
      logger,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect((error as Error).name).toBe('ModelUnavailableError');
    expect((error as Error).message).toMatch(/LLM_MODEL_PATH/);
    expect((error as Error).message).toMatch(/LLM_BASE_URL/);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('downloads with progress logs, resumes after a dropped connection, and verifies the file', async () => {
    const faultAt = CHUNK + 1_000_000;
    const host = await server(model, { faultAt, fault: 'drop' });
    const { logger, lines } = captureLogger();
    const dir = await tempDir();

    const path = await ensureModel({ uri: host.url, dir, logger });

    expect(path).toBe(join(dir, 'tiny.gguf'));
    expect(Buffer.compare(await readFile(path), Buffer.from(model))).toBe(0);
    expect((await readdir(dir)).sort()).toEqual(['tiny.gguf', 'tiny.gguf.verified']);
    // The first ranged GET was cut at `faultAt`. The downloader asked again
    // for that range only, from at most where it was cut, and fetched no
    // byte range twice otherwise: it never restarted from scratch.
    const starts = host.requests
      .filter((r) => r.method === 'GET' && r.range)
      .map((r) => Number(r.range?.match(/^bytes=(\d+)-/)?.[1]));
    const [dropped, ...later] = starts;
    expect(dropped).toBeLessThan(faultAt);
    expect(later.some((start) => start >= (dropped ?? 0) && start <= faultAt)).toBe(true);
    expect(new Set(later).size).toBe(later.length);
    const progress = lines.filter((l) => l.msg === 'downloading the embedded model');
    expect(progress.length).toBeGreaterThan(1);
    expect(lines.some((l) => l.msg === 'model download finished')).toBe(true);
    expect(host.crashes).toEqual([]);

    // Offline later: the verified file is found without the network.
    await host.close();
    expect(await ensureModel({ uri: host.url, dir, logger })).toBe(path);
  });

  it('resumes a download cut short by a killed process on the next start', async () => {
    // The first ranged GET stalls half-way through the second chunk; the other chunks
    // complete on parallel connections and their progress is saved with the partial file.
    const stalling = await server(model, { faultAt: CHUNK + 1_000_000, fault: 'stall' });
    const dir = await tempDir();
    const { done, chunkSize } = await killMidDownload(stalling.url, dir);
    expect(done.length).toBeGreaterThan(0);
    expect((await readdir(dir)).sort()).toEqual(['tiny.gguf.download.json', 'tiny.gguf.ipull']);

    // Started again, from the same host (its fault happens once): the download resumes.
    const before = stalling.requests.length;
    const { logger } = captureLogger();
    const path = await ensureModel({ uri: stalling.url, dir, logger });

    expect(Buffer.compare(await readFile(path), Buffer.from(model))).toBe(0);
    expect((await readdir(dir)).sort()).toEqual(['tiny.gguf', 'tiny.gguf.verified']);
    // The chunks recorded as complete were not fetched again: the download resumed.
    const fetched = rangesFetched(stalling.requests.slice(before));
    expect(fetched.length).toBeGreaterThan(0);
    expect(noneOverlaps(fetched, done, chunkSize)).toBe(true);
  });

  it('keeps no presigned URL signature beside a partial download, and resumes when signed again', async () => {
    const stalling = await server(model, { faultAt: CHUNK + 1_000_000, fault: 'stall' });
    const dir = await tempDir();
    const { done, chunkSize } = await killMidDownload(
      `${stalling.url}?X-Amz-Signature=first-signature-secret`,
      dir,
    );
    // Whoever reads the data directory must not find a URL that fetches the private file.
    for (const name of await readdir(dir)) {
      expect(await readFile(join(dir, name), 'latin1'), name).not.toContain('signature-secret');
    }

    // The operator signs the URL again (presigned URLs expire): the same file, resumed.
    const before = stalling.requests.length;
    const { logger } = captureLogger();
    const path = await ensureModel({
      uri: `${stalling.url}?X-Amz-Signature=second-signature-secret`,
      dir,
      logger,
    });
    expect(Buffer.compare(await readFile(path), Buffer.from(model))).toBe(0);
    expect(noneOverlaps(rangesFetched(stalling.requests.slice(before)), done, chunkSize)).toBe(
      true,
    );
  });

  it('gives up on a stalled download and never trusts what it left behind', async () => {
    const { logger, lines } = captureLogger();
    const dir = await tempDir();
    const stalling = await server(model, { faultAt: CHUNK + 1_000_000, fault: 'stall' });

    const error = await ensureModel({ uri: stalling.url, dir, logger, stallTimeoutMs: 500 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect((error as Error).message).toMatch(/no data for 500 ms/);
    // What it got is kept for the next attempt, as a partial file llama.cpp never loads.
    expect((await readdir(dir)).sort()).toEqual(['tiny.gguf.download.json', 'tiny.gguf.ipull']);
    await stalling.close();

    // The same file name from another URL is another download: the partial is not joined to
    // it, the whole file is fetched anew.
    const healthy = await server(model);
    const path = await ensureModel({ uri: healthy.url, dir, logger });
    expect(Buffer.compare(await readFile(path), Buffer.from(model))).toBe(0);
    expect(lines.some((l) => l.msg === 'discarding a partial download of another model file')).toBe(
      true,
    );
    expect(healthy.requests.some((r) => r.range?.startsWith('bytes=0-'))).toBe(true);
    expect(lines.some((l) => l.msg === 'model download finished')).toBe(true);
    expect((await readdir(dir)).sort()).toEqual(['tiny.gguf', 'tiny.gguf.verified']);
  });

  it.each([1, 4096])(
    'never takes as whole a file its host serves %i bytes short, its length said consistently',
    async (shortBy) => {
      const { logger } = captureLogger();
      const dir = await tempDir();
      const host = await server(model, { ending: 'short', shortBy });
      const error = await ensureModel({ uri: host.url, dir, logger }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ModelUnavailableError);
      expect((error as Error).message).toMatch(/unusable/);
      expect(await readdir(dir)).not.toContain('tiny.gguf.verified');
      expect(await readdir(dir)).not.toContain('tiny.gguf');
    },
  );

  it('fails with a typed error, keeping nothing, when its host answers an HTML 502 page', async () => {
    const { logger, lines } = captureLogger();
    const dir = await tempDir();
    const host = await server(model, { ending: 'html-502' });
    const started = Date.now();
    const error = await ensureModel({
      uri: host.url,
      dir,
      logger,
      connectTimeoutMs: 2_000,
      stallTimeoutMs: 1_000,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await readdir(dir)).not.toContain('tiny.gguf.verified');
    expect(JSON.stringify(lines)).not.toContain('Bad Gateway');
  });

  it('rejects and deletes a download that is not a GGUF model', async () => {
    const host = await server(new TextEncoder().encode('<html>not a model</html>'));
    const { logger } = captureLogger();
    const dir = await tempDir();
    const error = await ensureModel({ uri: host.url, dir, logger }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect((error as Error).message).toMatch(/not a GGUF model/);
    expect(await readdir(dir)).toEqual([]);
  });
});

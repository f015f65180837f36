import { readFileSync } from 'node:fs';
import { type ClientRequest, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { file, leftoverUploads, listedSources, PDFS } from '../support/ingest-client.ts';
import { multipartBody } from '../support/multipart.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { lockTable, waitForLockWaiter } from '../support/table-lock.ts';

/**
 * Many uploads at once. One is extracted at a time (INGEST_CONCURRENCY=1) and three may wait
 * for their turn (INGEST_QUEUE_MAX=3); each waiting upload holds a request, a connection and
 * its file, so the next is told Parley is busy instead of joining an endless line. And when
 * storing is slower than extraction, extracted documents (up to INGEST_MAX_BYTES of text each)
 * must not pile up in memory: at most INGEST_CONCURRENCY of them wait for a storing slot.
 */
const CONCURRENCY = 1;
const QUEUE_MAX = 3;
const BUSY = {
  detail: 'Parley is busy reading other uploads; try again in 30 seconds.',
  code: 'busy',
};

describe.each(ENGINES)('a burst of uploads on the %s engine', { timeout: 60_000 }, (engine) => {
  let setup: EngineSetup;
  let parley: RunningParley;

  beforeAll(async () => {
    setup = await engineSetup(engine, {
      INGEST_CONCURRENCY: String(CONCURRENCY),
      INGEST_QUEUE_MAX: String(QUEUE_MAX),
    });
    parley = await startParley({ env: setup.env, dataDir: setup.dataDir });
  }, 60_000);
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  /** Posts one upload as a client would; the answer's status, Retry-After and body. */
  async function upload(filename: string, data: Uint8Array | string) {
    const { body, contentType } = multipartBody([file(filename, data)]);
    const response = await parley.fetch('/ingest', {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    });
    return {
      filename,
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      body: (await response.json()) as Record<string, unknown>,
    };
  }

  it('tells the uploads past the line that Parley is busy, keeps no file of theirs, and ingests the others', async () => {
    // 14 pages: its extraction lasts far longer than receiving the whole burst takes.
    const pdf = readFileSync(`${PDFS}/tracemonkey.pdf`);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => upload(`burst-${i}.pdf`, pdf)),
    );

    const refused = answers.filter((answer) => answer.status === 503);
    const ingested = answers.filter((answer) => answer.status === 200);
    // Four are let in (one extracted, three waiting); the others find the line full. (An
    // extraction ending before the burst is received would let one more in.)
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(ingested.length).toBeGreaterThanOrEqual(CONCURRENCY + QUEUE_MAX);
    expect(refused.length + ingested.length).toBe(answers.length);
    for (const answer of refused) {
      expect(answer.retryAfter).toBe('30');
      expect(answer.body).toEqual(BUSY);
    }
    for (const answer of ingested) {
      expect(answer.body).toMatchObject({ source: answer.filename, chunks: expect.any(Number) });
    }
    expect((await listedSources(parley)).sort()).toEqual(
      ingested.map((answer) => answer.filename).sort(),
    );
    expect(leftoverUploads(parley)).toEqual([]);
    // Refusing is not a failure of Parley's: no error line.
    expect(parley.logs.filter((line) => line.level >= 50)).toEqual([]);
    expect(parley.logs.filter((line) => line.msg === 'upload refused')).toHaveLength(
      refused.length,
    );
    // Each refusal's warning names the code, with no stack trace: load, not a fault.
    const warned = parley.logs.filter((line) => line.msg === BUSY.detail);
    expect(warned).toHaveLength(refused.length);
    for (const line of warned)
      expect({ code: line.code, err: line.err }).toEqual({ code: 'busy', err: undefined });

    // The line is free again: the next upload is served.
    expect(await upload('after.txt', 'served again')).toMatchObject({ status: 200 });
    expect(leftoverUploads(parley)).toEqual([]);
  });

  it('holds at most INGEST_CONCURRENCY extracted documents waiting while storing is slower', async () => {
    const UPLOADS = CONCURRENCY + QUEUE_MAX;
    const queuedForStoring = () =>
      parley.logs.filter((line) => line.msg === 'upload queued for storing');
    const before = queuedForStoring().length;
    // Text is extracted in milliseconds. On a PostgreSQL server another client holds the
    // documents table, so no upload is stored until it lets go; the embedded engine cannot
    // be held from outside, so there the texts are large: each takes seconds to store.
    const databaseUrl = setup.env.DATABASE_URL;
    const release = databaseUrl ? await lockTable(databaseUrl, 'documents') : undefined;
    const paragraph = (i: number, n: number) =>
      `Paragraph ${n} of upload ${i} about queues, backpressure and bounded memory.\n\n`;
    const texts = Array.from({ length: UPLOADS }, (_, i) =>
      Array.from({ length: release ? 50 : 12_000 }, (_, n) => paragraph(i, n)).join(''),
    );
    let answers: Promise<Awaited<ReturnType<typeof upload>>[]>;
    try {
      answers = Promise.all(texts.map((text, i) => upload(`slow-${i}.txt`, text)));
      if (release && databaseUrl) {
        await waitForLockWaiter(databaseUrl);
        // Every upload that can be extracted now is: only then is storing let go.
        await parley.settled(1_500);
      }
    } finally {
      await release?.();
    }
    expect((await answers).map((answer) => answer.status)).toEqual(texts.map(() => 200));

    const waits = queuedForStoring()
      .slice(before)
      .map((line) => line.waiting as number);
    // Storing was the slower step (uploads did wait for it), yet never more than
    // INGEST_CONCURRENCY extracted documents waited at once: the rest waited as files.
    expect(waits.length).toBeGreaterThan(0);
    expect(Math.max(...waits)).toBeLessThanOrEqual(CONCURRENCY);
    expect(await listedSources(parley)).toEqual(
      expect.arrayContaining(texts.map((_, i) => `slow-${i}.txt`)),
    );
    expect(leftoverUploads(parley)).toEqual([]);
  });

  it('lets an upload whose client hung up while waiting leave the line at once, its file removed', async () => {
    const logged = (msg: string) => parley.logs.filter((line) => line.msg === msg).length;
    const databaseUrl = setup.env.DATABASE_URL;
    // Storing held (see above): one upload is stored, one waits for storing in its
    // extraction slot, and the three sent next fill the line.
    const release = databaseUrl ? await lockTable(databaseUrl, 'documents') : undefined;
    const text = (n: number) =>
      Array.from({ length: n }, (_, i) => `Line ${i} of a document stored slowly.\n\n`).join('');
    const uploads: ReturnType<typeof upload>[] = [];
    let hungUp: ClientRequest | undefined;
    try {
      const storingQueued = logged('upload queued for storing');
      for (const name of ['held-1.txt', 'held-2.txt']) {
        uploads.push(upload(name, text(release ? 20 : 30_000)));
      }
      await expect
        .poll(() => logged('upload queued for storing'), { timeout: 10_000 })
        .toBe(storingQueued + 1);
      for (const name of ['gone.txt', 'line-1.txt', 'line-2.txt']) {
        const queued = logged('upload queued');
        if (name === 'gone.txt') hungUp = send(name, text(20));
        else uploads.push(upload(name, text(20)));
        await expect.poll(() => logged('upload queued'), { timeout: 10_000 }).toBe(queued + 1);
      }
      const files = leftoverUploads(parley).length;
      hungUp?.destroy();
      // Its place and its file are given back now, not when its turn would have come.
      await expect.poll(() => leftoverUploads(parley).length, { timeout: 5_000 }).toBe(files - 1);
      const queued = logged('upload queued');
      uploads.push(upload('after-hang-up.txt', text(20)));
      await expect.poll(() => logged('upload queued'), { timeout: 10_000 }).toBe(queued + 1);
    } finally {
      await release?.();
    }
    const answers = await Promise.all(uploads);
    expect(answers.map((answer) => [answer.filename, answer.status])).toEqual(
      ['held-1.txt', 'held-2.txt', 'line-1.txt', 'line-2.txt', 'after-hang-up.txt'].map((name) => [
        name,
        200,
      ]),
    );
    expect(await listedSources(parley)).not.toContain('gone.txt');
    expect(leftoverUploads(parley)).toEqual([]);
  });

  /** Sends an upload whose answer is never read: the caller hangs up. */
  function send(filename: string, data: string): ClientRequest {
    const { body, contentType } = multipartBody([file(filename, data)]);
    const req = request(`${parley.url}/ingest`, {
      method: 'POST',
      headers: { 'content-type': contentType, 'content-length': String(body.length) },
    });
    req.on('error', () => {}); // the hang-up is ours
    req.end(body);
    return req;
  }
});

import { readFileSync } from 'node:fs';
import { extractImages, getDocumentProxy } from 'unpdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { file, ingest, leftoverUploads, listedSources, PDFS } from '../support/ingest-client.ts';
import { imageBomb, makePdf } from '../support/make-pdf.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/** OCR of the two scanned pages takes 10–60 s on these two-core machines, 160 s seen at load 25. */
const OCR_TIMEOUT_MS = 400_000;
/** An embedded start takes 2–5 s, and over 30 s when the machine's load is ~25 (seen). */
const START_TIMEOUT_MS = 120_000;

/**
 * A two-page scan made of the top eighth of each of issue7229.pdf's scanned pages (real scanned
 * text, two pages without a text layer), which OCR reads in an eighth of the time.
 */
async function topsOfScan(): Promise<Uint8Array> {
  const scan = await getDocumentProxy(new Uint8Array(readFileSync(`${PDFS}/issue7229.pdf`)));
  const pages = [];
  for (const number of [1, 2]) {
    const [image] = await extractImages(scan, number);
    if (!image) throw new Error(`issue7229.pdf has no image on page ${number}`);
    const rows = Math.round(image.height / 8);
    const gray = new Uint8Array(image.width * rows);
    for (let p = 0; p < gray.length; p++) gray[p] = image.data[p * image.channels] ?? 255;
    pages.push({ image: { width: image.width, height: rows, gray } });
  }
  return makePdf(pages);
}

/** Made once for both engines: deflating its 144 MB takes a while. */
let bombPdf: Uint8Array | undefined;

describe.each(ENGINES)('ingestion limits and OCR on the %s engine', (engine) => {
  let storage: EngineEnv;
  // Three servers with different settings; on the server engine they share one database, so
  // each test looks only at its own sources.
  let ocr: RunningParley;
  let noOcr: RunningParley;
  let impatient: RunningParley;

  beforeAll(
    async () => {
      storage = await engineEnv(engine);
      const start = (env: Record<string, string>) =>
        startParley({ env: { ...storage.env, ...env }, startTimeoutMs: START_TIMEOUT_MS });
      // One after the other: three starts at once overload a busy two-core machine.
      ocr = await start({});
      noOcr = await start({ OCR_ENABLED: 'false', INGEST_MEMORY_MB: '256' });
      impatient = await start({ INGEST_TIMEOUT_MS: '1000' });
    },
    3 * START_TIMEOUT_MS + 30_000,
  );
  afterAll(async () => {
    for (const parley of [ocr, noOcr, impatient]) await parley?.stop();
    await storage?.cleanup();
  });

  it('reads a scanned PDF and an encrypted scan by OCR', { timeout: OCR_TIMEOUT_MS }, async () => {
    const parley = ocr;
    // OCR runs in the extraction process whatever the engine: the whole scan (two full pages,
    // most of this file's time) is read once, on the embedded engine; the server engine gets the
    // tops of the same two pages, to store and list what OCR read.
    const data = engine === 'embedded' ? readFileSync(`${PDFS}/issue7229.pdf`) : await topsOfScan();
    const scanned = await ingest(parley, [file('issue7229.pdf', data)]);
    expect(scanned).toMatchObject({
      status: 200,
      body: { filename: 'issue7229.pdf', source: 'issue7229.pdf' },
    });
    // The whole scan is two pages of text (ten chunks); the tops are a few lines each. That
    // OCR read both pages is in the log line checked below.
    expect(scanned.body.chunks).toBeGreaterThanOrEqual(engine === 'embedded' ? 2 : 1);
    const locked = await ingest(parley, [
      file('pr6531_1.pdf', readFileSync(`${PDFS}/pr6531_1.pdf`)),
      { name: 'password', value: 'asdfasdf' },
    ]);
    expect(locked).toMatchObject({ status: 200, body: { chunks: 1 } });
    expect(await listedSources(parley)).toEqual(
      expect.arrayContaining(['issue7229.pdf', 'pr6531_1.pdf']),
    );
    await parley.waitForLog((line) => line.msg === 'document ingested' && line.ocrPages === 2);
    expect(leftoverUploads(parley)).toEqual([]);
  });

  it('says how to enable OCR, and stops a decompression bomb at the memory limit', async () => {
    const parley = noOcr;
    const scanned = await ingest(parley, [file('scan.pdf', readFileSync(`${PDFS}/issue7229.pdf`))]);
    expect(scanned).toEqual({
      status: 422,
      body: { detail: expect.stringContaining('set OCR_ENABLED=true') },
    });

    // 250 KB that unpack to a 12,000 × 12,000 image (144 MB of gray, more once decoded).
    bombPdf ??= makePdf([imageBomb(12_000)]);
    const bomb = await ingest(parley, [file('bomb.pdf', bombPdf)]);
    expect(bomb).toEqual({
      status: 422,
      body: { detail: expect.stringContaining('more than 256 MB of memory') },
    });

    expect((await parley.fetch('/health')).status).toBe(200);
    expect(await ingest(parley, [file('after.txt', 'still serving')])).toMatchObject({
      status: 200,
    });
    const sources = await listedSources(parley);
    expect(sources).toContain('after.txt');
    expect(sources).not.toContain('scan.pdf');
    expect(sources).not.toContain('bomb.pdf');
    expect(leftoverUploads(parley)).toEqual([]);
  });

  it('stops an extraction that runs past INGEST_TIMEOUT_MS', { timeout: 60_000 }, async () => {
    const parley = impatient;
    const slow = await ingest(parley, [file('slow.pdf', readFileSync(`${PDFS}/issue7229.pdf`))]);
    expect(slow).toEqual({
      status: 422,
      body: { detail: expect.stringContaining('took longer than 1 s') },
    });
    expect(await listedSources(parley)).not.toContain('slow.pdf');
    expect(leftoverUploads(parley)).toEqual([]);
  });
});

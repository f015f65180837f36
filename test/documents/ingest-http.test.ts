import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { dirname, join } from 'node:path';
import iconv from 'iconv-lite';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, type EngineEnv, engineEnv } from '../support/engines.ts';
import { longestHealthWait } from '../support/health-during.ts';
import { file, ingest, leftoverUploads, listedSources, PDFS } from '../support/ingest-client.ts';
import { makeDocx } from '../support/make-docx.ts';
import { makePdf } from '../support/make-pdf.ts';
import { multipartBody } from '../support/multipart.ts';
import { sendOverRawSocket } from '../support/raw-http.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

const MAX_BYTES = 3 * 1024 * 1024;
const KOREAN =
  '서울은 대한민국의 수도이며, 한강이 도시를 가로질러 흐른다. 오늘 서울의 날씨는 맑다.';
const CP949_ONLY = '똠방각하와 햏자는 완성형 밖의 글자다. 서울에서 만난 친구가 웃었다.';
const FRENCH = 'Le garçon a commandé un café crème — « déjà vu », dit-il à l’hôtel.';

/**
 * The 176-page PDF takes 2–5 s on a quiet machine and over 30 s at a load of ~20 (the
 * extraction runs at nice 10, behind everything else): each test gets two minutes.
 */
describe.each(ENGINES)('POST /ingest on the %s engine', { timeout: 120_000 }, (engine) => {
  let storage: EngineEnv;
  let parley: RunningParley;

  beforeAll(async () => {
    storage = await engineEnv(engine);
    parley = await startParley({
      env: { ...storage.env, INGEST_MAX_BYTES: String(MAX_BYTES) },
      startTimeoutMs: 120_000, // over 30 s seen when the shared machine's load is ~25
    });
  }, 150_000);
  afterAll(async () => {
    await parley?.stop();
    await storage?.cleanup();
  });
  afterEach(() => {
    // Whatever a test sent, success or failure, the temporary file is gone.
    expect(leftoverUploads(parley)).toEqual([]);
  });

  it('ingests a text-heavy PDF, lists it, and logs progress but no content', async () => {
    const answer = await ingest(parley, [file('rfc2616.pdf', readFileSync(`${PDFS}/rfc2616.pdf`))]);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      chunks: expect.any(Number),
      filename: 'rfc2616.pdf',
      source: 'rfc2616.pdf',
    });
    expect(answer.body.chunks).toBeGreaterThan(0);
    expect(await listedSources(parley)).toContain('rfc2616.pdf');
    await parley.waitForLog((line) => line.msg === 'document ingested');
    await parley.settled();
    const progress = parley.logs.filter((line) => line.msg === 'extracting pages');
    expect(progress.at(-1)).toMatchObject({ pagesDone: 176, pagesTotal: 176 });
    expect(parley.output()).not.toContain('Hypertext Transfer Protocol');
  });

  it('ingests a two-column paper and a Korean PDF under the sources given', async () => {
    const paper = await ingest(parley, [
      file('tracemonkey.pdf', readFileSync(`${PDFS}/tracemonkey.pdf`)),
      { name: 'source', value: 'papers/2009/tracemonkey.pdf' },
    ]);
    expect(paper).toMatchObject({
      status: 200,
      body: { source: 'papers/2009/tracemonkey.pdf', filename: 'tracemonkey.pdf' },
    });
    const korean = await ingest(parley, [
      file('소설.pdf', readFileSync(`${PDFS}/bug1627427_reduced.pdf`)),
    ]);
    expect(korean).toMatchObject({ status: 200, body: { chunks: 1, source: '소설.pdf' } });
    expect(await listedSources(parley)).toEqual(
      expect.arrayContaining(['papers/2009/tracemonkey.pdf', '소설.pdf']),
    );
  });

  it('replaces a source that is ingested again', async () => {
    const first = await ingest(parley, [
      file('notes.md', '# Notes\n\nfirst version'),
      { name: 'source', value: 'again.md' },
    ]);
    const second = await ingest(parley, [
      file('notes.txt', 'second version'),
      { name: 'source', value: 'again.md' },
    ]);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect((await listedSources(parley)).filter((source) => source === 'again.md')).toHaveLength(1);
  });

  it('ends two simultaneous uploads of one source with exactly one document', async () => {
    const upload = (text: string) =>
      ingest(parley, [file('same.txt', text), { name: 'source', value: 'same.txt' }]);
    const answers = await Promise.all([upload('version a'), upload('version b')]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect((await listedSources(parley)).filter((source) => source === 'same.txt')).toHaveLength(1);
  });

  it('reads an encrypted PDF only with its password', async () => {
    const data = readFileSync(`${PDFS}/pr6531_1.pdf`);
    const none = await ingest(parley, [file('locked.pdf', data)]);
    expect(none).toEqual({
      status: 422,
      body: { detail: expect.stringContaining('a password is needed') },
    });
    const wrong = await ingest(parley, [
      file('locked.pdf', data),
      { name: 'password', value: 'letmein' },
    ]);
    expect(wrong).toEqual({
      status: 422,
      body: { detail: expect.stringContaining('password given is wrong') },
    });
    expect(await listedSources(parley)).not.toContain('locked.pdf');
  });

  it('answers 422 for a corrupt or a truncated PDF', async () => {
    const corrupt = await ingest(parley, [file('bug.pdf', readFileSync(`${PDFS}/bug1020226.pdf`))]);
    expect(corrupt).toEqual({
      status: 422,
      body: { detail: expect.stringContaining('damaged or truncated') },
    });
    const half = readFileSync(`${PDFS}/tracemonkey.pdf`).subarray(0, 100_000);
    const truncated = await ingest(parley, [file('half.pdf', half)]);
    expect(truncated).toEqual({
      status: 422,
      body: { detail: expect.stringContaining('damaged or truncated') },
    });
  });

  it('reads Word, HTML and Markdown files', async () => {
    const docx = makeDocx([{ text: 'Quarterly report', heading: 1 }, { text: 'Sales rose.' }]);
    const html =
      '<!doctype html><html><body><nav><a href="/">Home</a></nav><article><h1>Terns</h1><p>Arctic terns fly from pole to pole every year, seeing two summers, about seventy thousand kilometres.</p></article></body></html>';
    for (const [name, data] of [
      ['report.docx', docx],
      ['terns.html', html],
      ['guide.md', '# Guide\n\n## Install\n\nRun the installer.'],
    ] as const) {
      const answer = await ingest(parley, [file(name, data)]);
      expect(answer, name).toMatchObject({ status: 200, body: { source: name } });
      expect(answer.body.chunks).toBeGreaterThan(0);
    }
  });

  // A run of blanks that no newline ends made a regular expression try every position of it:
  // a 300 KB run took minutes, and the upload with it.
  it('reads files with a long run of blanks in them without stalling', {
    timeout: 30_000,
  }, async () => {
    const blanks = ' \t'.repeat(150_000);
    for (const [name, data] of [
      ['blanks.txt', `Lighthouse keepers log the weather.${blanks}Every hour.`],
      ['blanks.md', `# Log\n\nLighthouse keepers${blanks}log the weather.\n`],
      ['blanks.html', `<html><body><pre>Lighthouse log${blanks}kept hourly.\n</pre></body></html>`],
      ['blanks.pdf', makePdf([{ text: [`Lighthouse log${' '.repeat(300_000)}kept hourly.`] }])],
    ] as const) {
      const answer = await ingest(parley, [file(name, data)]);
      expect(answer, name).toMatchObject({ status: 200, body: { source: name, chunks: 1 } });
    }
  });

  // A heading's text was read with an expression that tried every way of sharing a run of
  // spaces inside it between the text and the closing: cubic, 22 s for 4,000 spaces.
  it('keeps answering other requests while it reads a heading with a long run of spaces', async () => {
    const markdown = `# Lighthouse${' '.repeat(4_000)}log #\n\nKeepers write the weather down every hour.\n`;
    const upload = ingest(parley, [file('heading.md', markdown)]);
    const longestWaitMs = await longestHealthWait(parley, upload);
    expect(await upload).toMatchObject({ status: 200, body: { source: 'heading.md', chunks: 1 } });
    expect(longestWaitMs).toBeLessThan(3_000);
  });

  // Japanese or Chinese has no spaces to cut a long paragraph at: it is cut by characters, and
  // measuring the rest of it at every cut made that quadratic, on the event loop (a 1 MB
  // paragraph held every other request for seconds).
  it('keeps answering other requests while it reads a long paragraph without spaces', async () => {
    const sentence = '灯台守は毎時の天気を記録し、船の往来を見守っている。';
    const upload = ingest(parley, [file('tokyo.txt', sentence.repeat(14_000))]);
    const longestWaitMs = await longestHealthWait(parley, upload);
    expect(await upload).toMatchObject({ status: 200, body: { source: 'tokyo.txt' } });
    expect((await upload).body.chunks).toBeGreaterThan(700);
    expect(longestWaitMs).toBeLessThan(3_000);
  });

  it('decodes UTF-16, EUC-KR, CP949 and Windows-1252 text, and text named .bin or .pdf', async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(KOREAN, 'utf16le')]);
    const files: [string, Uint8Array][] = [
      ['utf16.txt', utf16],
      ['euc-kr.txt', iconv.encode(KOREAN, 'euc-kr')],
      ['cp949.txt', iconv.encode(CP949_ONLY, 'cp949')],
      ['latin.txt', iconv.encode(FRENCH, 'windows-1252')],
      ['upload.bin', Buffer.from('plain text under a binary name')],
      ['not-really.pdf', Buffer.from('plain text under a PDF name')],
    ];
    for (const [name, data] of files) {
      expect(await ingest(parley, [file(name, data)]), name).toMatchObject({
        status: 200,
        body: { chunks: 1 },
      });
    }
  });

  it('refuses types it does not read with 415, and empty files with 422', async () => {
    const png = await ingest(parley, [
      file('photo.pdf', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0])),
    ]);
    expect(png).toEqual({ status: 415, body: { detail: expect.stringContaining('PNG image') } });
    const junk = await ingest(parley, [
      file('data.bin', Buffer.from([1, 2, 3, 4, 5, 6, 7, 0, 8, 9])),
    ]);
    expect(junk.status).toBe(415);
    expect(await ingest(parley, [file('empty.txt', '')])).toEqual({
      status: 422,
      body: { detail: 'The file is empty.' },
    });
    const blank = await ingest(parley, [file('blank.txt', '  \n\n\t ')]);
    expect(blank).toEqual({ status: 422, body: { detail: 'The file has no text to index.' } });
  });

  it('answers 422 without the file part, and 415 for a body that is not multipart', async () => {
    const missing = await ingest(parley, [{ name: 'source', value: 'x.txt' }]);
    expect(missing).toEqual({
      status: 422,
      body: { detail: expect.stringContaining('"file" is required') },
    });
    const json = await parley.fetch('/ingest', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json.status).toBe(415);
  });

  it('keeps hostile names out of the file system and refuses bad sources', async () => {
    const outside = join(dirname(parley.dataDir), 'evil.txt');
    const traversal = await ingest(parley, [
      file('../../evil.txt', 'text'),
      { name: 'source', value: '../../evil.txt' },
    ]);
    expect(traversal).toMatchObject({ status: 200, body: { source: '../../evil.txt' } });
    const absolute = await ingest(parley, [
      file('/etc/passwd', 'text'),
      { name: 'source', value: '/etc/passwd' },
    ]);
    expect(absolute).toMatchObject({ status: 200, body: { source: '/etc/passwd' } });
    expect(existsSync(outside)).toBe(false);
    expect(await listedSources(parley)).toEqual(
      expect.arrayContaining(['../../evil.txt', '/etc/passwd']),
    );

    const longName = `${'n'.repeat(4096)}.txt`;
    const long = await ingest(parley, [file(longName, 'text')]);
    expect(long).toEqual({
      status: 422,
      body: { detail: expect.stringContaining('at most 1024 characters') },
    });
    const nulName = await ingest(parley, [file('nul\u0000.txt', 'text')]);
    expect(nulName).toEqual({
      status: 422,
      body: { detail: expect.stringContaining('control characters') },
    });
    const nul = await ingest(parley, [
      file('a.txt', 'text'),
      { name: 'source', value: 'bad\u0000source' },
    ]);
    expect(nul).toEqual({
      status: 422,
      body: { detail: expect.stringContaining('control characters') },
    });
    const empty = await ingest(parley, [file('a.txt', 'text'), { name: 'source', value: '' }]);
    expect(empty).toEqual({ status: 422, body: { detail: 'The source must not be empty.' } });
    // Zero-width spaces and a byte-order mark pass a length check but list as a blank line.
    const invisible = await ingest(parley, [
      file('a.txt', 'text'),
      { name: 'source', value: '\u200b\ufeff' },
    ]);
    expect(invisible).toEqual({
      status: 422,
      body: { detail: 'The source must contain a visible character.' },
    });
    const tooLong = await ingest(parley, [
      file('a.txt', 'text'),
      { name: 'source', value: 's'.repeat(1025) },
    ]);
    expect(tooLong.status).toBe(422);
  });

  it('answers 413 for a file over INGEST_MAX_BYTES and keeps nothing of it', async () => {
    const answer = await ingest(parley, [file('big.txt', Buffer.alloc(MAX_BYTES + 1, 'a'))]);
    expect(answer).toEqual({
      status: 413,
      body: { detail: expect.stringContaining('INGEST_MAX_BYTES') },
    });
    expect(await listedSources(parley)).not.toContain('big.txt');
  });

  it('answers 413 to a client still sending an upload over INGEST_MAX_BYTES, and keeps the connection', async () => {
    // A client writes its whole upload before it reads (as curl does): the 413 must reach it,
    // not a reset connection, and the connection must serve its next request.
    const { body, contentType } = multipartBody([
      file('bigger.txt', Buffer.alloc(MAX_BYTES + 4 * 1024 * 1024, 'a')),
    ]);
    const replies = await sendOverRawSocket(parley.url, [
      {
        head: `POST /ingest HTTP/1.1\r\nHost: parley\r\nContent-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n\r\n`,
        body,
      },
      { head: 'GET /health HTTP/1.1\r\nHost: parley\r\n\r\n' },
    ]);
    expect(replies.error).toBeUndefined();
    expect(replies.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(replies.text).toContain('INGEST_MAX_BYTES');
    expect(replies.text).toMatch(/\r\n\r\n[\s\S]*HTTP\/1\.1 200 /);
    expect(replies.closedByServer).toBe(false);
    expect(await listedSources(parley)).not.toContain('bigger.txt');
    await waitFor(() => leftoverUploads(parley).length === 0);
  });

  it('stops reading an upload declared far over INGEST_MAX_BYTES: 413, then the connection closes', async () => {
    const { body, contentType } = multipartBody([
      file('huge.txt', Buffer.alloc(MAX_BYTES + 1024 * 1024, 'a')),
    ]);
    const declared = body.length + 64 * 1024 * 1024; // the client says there is far more to come
    const replies = await sendOverRawSocket(
      parley.url,
      [
        {
          head: `POST /ingest HTTP/1.1\r\nHost: parley\r\nContent-Type: ${contentType}\r\nContent-Length: ${declared}\r\n\r\n`,
          body: body.subarray(0, MAX_BYTES + 512 * 1024),
        },
      ],
      { untilClosed: true },
    );
    expect(replies.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(replies.text).toContain('INGEST_MAX_BYTES');
    expect(replies.closedByServer).toBe(true);
    await waitFor(() => leftoverUploads(parley).length === 0);
  });

  it('removes the partial file when the client aborts mid-upload, and keeps serving', async () => {
    await abortMidUpload(parley);
    await waitFor(() => leftoverUploads(parley).length === 0);
    expect((await parley.fetch('/health')).status).toBe(200);
    // A hang-up is the client's doing: no server error is logged for it.
    expect(parley.logs.filter((line) => line.level >= 50)).toEqual([]);
  });
});

/** Sends the start of a 2 MB upload, waits until Parley is writing it to disk, then hangs up. */
async function abortMidUpload(parley: RunningParley): Promise<void> {
  const boundary = 'abortboundary';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n`,
  );
  const req = request(`${parley.url}/ingest`, {
    method: 'POST',
    headers: {
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(head.length + 2 * 1024 * 1024),
    },
  });
  req.on('error', () => {}); // the hang-up is ours
  req.write(head);
  req.write(Buffer.alloc(256 * 1024, 'a'));
  await waitFor(() => leftoverUploads(parley).length === 1);
  req.destroy();
}

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import iconv from 'iconv-lite';
import { extractImages, getDocumentProxy } from 'unpdf';
import { afterAll, describe, expect, it } from 'vitest';
import type { DocumentKind } from '../../src/documents/extracted-document.ts';
import { extractDocument } from '../../src/documents/extraction/extract-document.ts';
import { tesseractReader } from '../../src/documents/extraction/ocr.ts';
import { makeDocx } from '../support/make-docx.ts';
import { makePdf } from '../support/make-pdf.ts';

const PDFS = '../shared/data/pdfs';
const dir = mkdtempSync(join(tmpdir(), 'parley-extract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NO_OCR = { ocr: null, ocrUnavailableReason: 'OCR is off in this test' };

function extract(data: Uint8Array | string, kind: DocumentKind, options = NO_OCR) {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.bin`);
  writeFileSync(path, data);
  return extractDocument(path, kind, options);
}

describe('extractDocument', () => {
  it('reads the Korean PDF as Hangul text, with its page number', async () => {
    const document = await extract(readFileSync(`${PDFS}/bug1627427_reduced.pdf`), 'pdf');
    expect(document.pages).toHaveLength(1);
    expect(document.pages[0]?.page).toBe(1);
    expect(document.pages[0]?.text).toContain('눈은 아니 오고');
    expect(document.ocrPages).toEqual([]);
  });

  it('reads every page of a two-column paper, its title first', async () => {
    const document = await extract(readFileSync(`${PDFS}/tracemonkey.pdf`), 'pdf');
    expect(document.pages.map((page) => page.page)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    ]);
    expect(document.pages[0]?.text).toMatch(/^Trace-based Just-in-Time Type Specialization/);
  });

  it('opens an encrypted PDF with its password, and says which problem a bad one has', async () => {
    const data = readFileSync(`${PDFS}/pr6531_1.pdf`);
    // Its one page is an image: once decrypted, it is OCR's (turned off here) to read.
    await expect(
      extract(data, 'pdf', { ...NO_OCR, password: 'asdfasdf' } as never),
    ).rejects.toMatchObject({
      code: 'ocr_unavailable',
    });
    await expect(extract(data, 'pdf')).rejects.toMatchObject({ code: 'password_required' });
    await expect(
      extract(data, 'pdf', { ...NO_OCR, password: 'nope' } as never),
    ).rejects.toMatchObject({
      code: 'password_wrong',
    });
  });

  it('refuses a corrupt PDF and a scanned PDF it cannot read', async () => {
    await expect(extract(readFileSync(`${PDFS}/bug1020226.pdf`), 'pdf')).rejects.toMatchObject({
      code: 'corrupt',
    });
    await expect(extract(readFileSync(`${PDFS}/issue7229.pdf`), 'pdf')).rejects.toMatchObject({
      code: 'ocr_unavailable',
      message: 'OCR is off in this test',
    });
  });

  it('keeps the main content of an HTML page and drops its navigation', async () => {
    const paragraph = (n: number) =>
      `<p>Paragraph ${n}: the arctic tern flies from pole to pole every year and sees two summers, covering about seventy thousand kilometres on the way.</p>`;
    const html = `<!doctype html><html><head><title>Terns</title></head><body>
      <header><nav><a href="/">Home</a> <a href="/deals">Cheap flights today</a></nav></header>
      <aside>Subscribe to our newsletter</aside>
      <article><h1>The arctic tern</h1>${paragraph(1)}${paragraph(2)}<h2>Routes</h2>${paragraph(3)}</article>
      <footer>Copyright and legal notices</footer></body></html>`;
    const [page] = (await extract(html, 'html')).pages;
    expect(page?.text).toContain('# The arctic tern');
    expect(page?.text).toContain('## Routes');
    expect(page?.text).toContain('Paragraph 3: the arctic tern');
    for (const chrome of ['Cheap flights', 'newsletter', 'Copyright', 'Home'])
      expect(page?.text).not.toContain(chrome);
  });

  it('turns Word headings into Markdown headings', async () => {
    const docx = makeDocx([
      { text: 'Quarterly report', heading: 1 },
      { text: 'Sales rose by 12 percent.' },
      { text: '매출 현황', heading: 2 },
      { text: '서울 지점의 매출이 늘었다.' },
    ]);
    const [page] = (await extract(docx, 'docx')).pages;
    expect(page).toEqual({
      page: null,
      text: '# Quarterly report\n\nSales rose by 12 percent.\n\n## 매출 현황\n\n서울 지점의 매출이 늘었다.',
    });
  });

  it('decodes legacy-encoded text and refuses a file with no text', async () => {
    const korean = '서울은 대한민국의 수도이며, 한강이 도시를 가로질러 흐른다.\r\n둘째 줄.';
    const [page] = (await extract(iconv.encode(korean, 'cp949'), 'text')).pages;
    expect(page?.text).toBe('서울은 대한민국의 수도이며, 한강이 도시를 가로질러 흐른다.\n둘째 줄.');
    await expect(extract(' \n\t\n', 'text')).rejects.toMatchObject({ code: 'no_text' });
  });

  it('reads by OCR only the pages without a text layer', { timeout: 240_000 }, async () => {
    // A two-page PDF: typed text, then the top of the scanned certificate of issue7229.pdf.
    const scan = await getDocumentProxy(new Uint8Array(readFileSync(`${PDFS}/issue7229.pdf`)));
    const [image] = await extractImages(scan, 1);
    if (!image) throw new Error('issue7229.pdf has no image');
    const rows = Math.round(image.height / 8);
    const gray = new Uint8Array(image.width * rows);
    for (let p = 0; p < gray.length; p++) gray[p] = image.data[p * image.channels] ?? 255;
    const pdf = makePdf([
      { text: ['Typed page about inspection schedules.'] },
      { image: { width: image.width, height: rows, gray } },
    ]);
    const ocr = tesseractReader(dir);
    try {
      const document = await extract(pdf, 'pdf', { ocr, ocrUnavailableReason: '' } as never);
      expect(document.ocrPages).toEqual([2]);
      expect(document.pages[0]?.text).toBe('Typed page about inspection schedules.');
      expect(document.pages[1]?.text).toContain('Certificate of periodic technical inspection');
    } finally {
      await ocr.close();
    }
  });
});

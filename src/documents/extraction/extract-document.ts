import { readFile } from 'node:fs/promises';
import type { DocumentKind, ExtractedDocument } from '../extracted-document.ts';
import { decodeText } from './decode-text.ts';
import { ExtractionFailure } from './extraction-failure.ts';
import type { PageReader } from './ocr.ts';
import { pdfToText } from './pdf-to-text.ts';
import { tidyText } from './tidy-text.ts';

export interface ExtractOptions {
  password?: string;
  ocr: PageReader | null;
  ocrUnavailableReason: string;
  onProgress?: (pagesDone: number, pagesTotal: number) => void;
}

/** The text of a file whose kind is already known (see detect-type.ts). */
export async function extractDocument(
  path: string,
  kind: DocumentKind,
  options: ExtractOptions,
): Promise<ExtractedDocument> {
  const bytes = new Uint8Array(await readFile(path));
  const document =
    kind === 'pdf'
      ? await pdfToText(bytes, options)
      : { kind, pages: [{ page: null, text: await textOf(bytes, kind) }], ocrPages: [] };
  if (document.pages.every((page) => page.text.trim() === '')) {
    throw new ExtractionFailure(
      'no_text',
      kind === 'pdf'
        ? 'The PDF has no text to index: no text layer and no scanned page that OCR could read.'
        : 'The file has no text to index.',
    );
  }
  return document;
}

async function textOf(bytes: Uint8Array, kind: Exclude<DocumentKind, 'pdf'>): Promise<string> {
  if (kind === 'docx') return docxToText(bytes);
  const text = decodeText(bytes).text.replace(/\r\n?/g, '\n');
  if (kind === 'html') return (await htmlConverter()).htmlToText(text, { mainContent: true });
  return tidyText(text);
}

/**
 * The HTML and Word readers are loaded when a file needs them: together they take ~0.5 s to
 * import (linkedom, mammoth), which every PDF's extraction process would otherwise pay.
 */
const htmlConverter = () => import('./html-to-text.ts');

/** DOCX → HTML (mammoth maps Word's heading styles to h1…h6) → text with `#` headings. */
async function docxToText(bytes: Uint8Array): Promise<string> {
  let html: string;
  const [{ default: mammoth }, { htmlToText }] = await Promise.all([
    import('mammoth'),
    htmlConverter(),
  ]);
  try {
    html = (await mammoth.convertToHtml({ buffer: Buffer.from(bytes) })).value;
  } catch {
    throw new ExtractionFailure(
      'corrupt',
      'The Word document is damaged and cannot be read; check the file and upload it again.',
    );
  }
  return htmlToText(html, { mainContent: false });
}

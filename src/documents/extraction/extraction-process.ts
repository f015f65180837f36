/**
 * Entry point of an extraction child process (started by run-extraction.ts): reads the files
 * it is sent, one at a time, reporting progress and sending each one's text back. Parsing,
 * decompression and OCR run here, so a hostile file can at worst exhaust this process, which
 * the parent kills, never the server. The parent decides how long it lives; it exits by
 * itself when the parent goes.
 */
import type { DocumentKind, ExtractedDocument } from '../extracted-document.ts';
import { extractDocument } from './extract-document.ts';
import { ExtractionFailure, type ExtractionFailureCode } from './extraction-failure.ts';
import { type PageReader, tesseractReader } from './ocr.ts';

export interface ExtractionJob {
  path: string;
  kind: DocumentKind;
  password?: string;
  ocrEnabled: boolean;
  /** A folder Parley owns, for OCR's language-data links (not the uploads folder). */
  cacheDir: string;
}

export type ExtractionMessage =
  | { type: 'progress'; pagesDone: number; pagesTotal: number }
  | { type: 'done'; document: ExtractedDocument }
  | { type: 'failed'; code: ExtractionFailureCode; message: string };

const send = (message: ExtractionMessage) =>
  new Promise<void>((resolve) => process.send?.(message, undefined, {}, () => resolve()));

process.on('disconnect', () => process.exit(0));

process.on('message', async (job: ExtractionJob) => {
  const reader: PageReader | null = job.ocrEnabled ? tesseractReader(job.cacheDir) : null;
  const unavailable =
    'OCR is turned off (OCR_ENABLED=false), and this PDF has scanned pages without a text layer; set OCR_ENABLED=true to read them.';
  try {
    const document = await extractDocument(job.path, job.kind, {
      password: job.password,
      ocr: reader,
      ocrUnavailableReason: unavailable,
      onProgress: (pagesDone, pagesTotal) => void send({ type: 'progress', pagesDone, pagesTotal }),
    });
    await send({ type: 'done', document });
  } catch (error) {
    if (error instanceof ExtractionFailure) {
      await send({ type: 'failed', code: error.code, message: error.message });
    } else {
      await send({
        type: 'failed',
        code: 'corrupt',
        message: `The file could not be read as ${job.kind.toUpperCase()}: it looks damaged.`,
      });
    }
  } finally {
    await reader?.close().catch(() => {});
  }
});

import { extractImages, getDocumentProxy } from 'unpdf';
import type { ExtractedDocument, ExtractedPage } from '../extracted-document.ts';
import { ExtractionFailure } from './extraction-failure.ts';
import type { GrayImage, PageReader } from './ocr.ts';
import { tidyText } from './tidy-text.ts';

export interface PdfOptions {
  password?: string;
  /** Reads scanned pages; null where OCR is unavailable. */
  ocr: PageReader | null;
  /** Why OCR is unavailable, for the 422 a scanned PDF gets then. */
  ocrUnavailableReason: string;
  onProgress?: (pagesDone: number, pagesTotal: number) => void;
}

/** Images smaller than this (logos, bullets) are not worth reading. */
const MIN_OCR_PIXELS = 200 * 200;

/**
 * Text of every page from the PDF's text layer (unpdf, i.e. PDF.js). A page without one is a
 * scan: its embedded images are read by OCR, and only those pages. Pages are not rendered
 * (that would need a native canvas); scanned PDFs carry each page as an image, which is what
 * OCR needs.
 */
export async function pdfToText(data: Uint8Array, options: PdfOptions): Promise<ExtractedDocument> {
  const pdf = await open(data, options.password);
  try {
    const pages: ExtractedPage[] = [];
    const ocrPages: number[] = [];
    let unreadScans = 0;
    for (let number = 1; number <= pdf.numPages; number++) {
      let text = await pageText(pdf, number);
      if (text.trim() === '') {
        const images = await pageImages(pdf, number);
        if (images.length > 0 && !options.ocr) unreadScans++;
        else if (images.length > 0 && options.ocr) {
          const read: string[] = [];
          for (const image of images) read.push(tidyText(await options.ocr.read(image)));
          text = read.filter(Boolean).join('\n\n');
          if (text) ocrPages.push(number);
        }
      }
      pages.push({ page: number, text });
      options.onProgress?.(number, pdf.numPages);
    }
    // Without OCR, a PDF with some text is indexed without its scanned pages; one with none
    // is refused with the reason, so the user knows what to enable.
    if (unreadScans > 0 && pages.every((page) => page.text === '')) {
      throw new ExtractionFailure('ocr_unavailable', options.ocrUnavailableReason);
    }
    return { kind: 'pdf', pages, ocrPages };
  } finally {
    await pdf.cleanup();
  }
}

async function open(data: Uint8Array, password: string | undefined) {
  try {
    return await getDocumentProxy(data, { password, verbosity: 0 });
  } catch (error) {
    const name = (error as { name?: string }).name;
    if (name === 'PasswordException') {
      // PDF.js: code 1 = a password is needed, 2 = the one given is wrong.
      if ((error as { code?: number }).code === 2) {
        throw new ExtractionFailure(
          'password_wrong',
          'The PDF is encrypted and the password given is wrong; send the right one in the "password" field.',
        );
      }
      throw new ExtractionFailure(
        'password_required',
        'The PDF is encrypted: a password is needed; send it in the "password" field.',
      );
    }
    throw new ExtractionFailure(
      'corrupt',
      'The PDF is damaged or truncated and cannot be read; check the file and upload it again.',
    );
  }
}

type Pdf = Awaited<ReturnType<typeof getDocumentProxy>>;

/** The page's text items in reading order; PDF.js marks line ends with `hasEOL`. */
async function pageText(pdf: Pdf, number: number): Promise<string> {
  try {
    const page = await pdf.getPage(number);
    const content = await page.getTextContent();
    let text = '';
    for (const item of content.items) {
      if (!('str' in item)) continue;
      text += item.str;
      if (item.hasEOL) text += '\n';
    }
    page.cleanup();
    return tidyText(text);
  } catch {
    throw new ExtractionFailure(
      'corrupt',
      `Page ${number} of the PDF is damaged and cannot be read; check the file and upload it again.`,
    );
  }
}

async function pageImages(pdf: Pdf, number: number): Promise<GrayImage[]> {
  let images: Awaited<ReturnType<typeof extractImages>>;
  try {
    images = await extractImages(pdf, number);
  } catch {
    return [];
  }
  return images
    .filter((image) => image.width * image.height >= MIN_OCR_PIXELS)
    .map((image) => toGray(image.data, image.width, image.height, image.channels));
}

/** Luma (ITU-R BT.601) of RGB(A), or the samples as they are for grayscale. */
function toGray(
  data: Uint8ClampedArray,
  width: number,
  height: number,
  channels: number,
): GrayImage {
  if (channels === 1)
    return { width, height, pixels: new Uint8Array(data.buffer, data.byteOffset, width * height) };
  const pixels = new Uint8Array(width * height);
  for (let p = 0, q = 0; p < pixels.length; p++, q += channels) {
    pixels[p] = ((data[q] ?? 0) * 77 + (data[q + 1] ?? 0) * 150 + (data[q + 2] ?? 0) * 29) >> 8;
  }
  return { width, height, pixels };
}

import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Worker } from 'tesseract.js';
import { ExtractionFailure } from './extraction-failure.ts';

/** An 8-bit grayscale image, row by row. */
export interface GrayImage {
  width: number;
  height: number;
  pixels: Uint8Array;
}

export interface PageReader {
  read(image: GrayImage): Promise<string>;
  close(): Promise<void>;
}

/** English and Korean, as the issue asks; each from its own npm package. */
export const OCR_LANGUAGES = ['eng', 'kor'] as const;

const require = createRequire(import.meta.url);

/**
 * Tesseract (tesseract.js: the C++ engine compiled to WebAssembly, run in a worker thread of
 * the extraction process) with its language data from the `@tesseract.js-data/*` npm packages,
 * so `npm install` is all it needs and nothing is downloaded at run time. Started on the first
 * scanned page only; throws `ocr_unavailable` there when the language data is missing.
 */
export function tesseractReader(cacheDir: string): PageReader {
  let worker: Promise<Worker> | undefined;
  const start = () => {
    // Imported here too: a PDF with a text layer never loads the OCR engine.
    worker ??= import('tesseract.js').then(({ createWorker, OEM }) =>
      createWorker([...OCR_LANGUAGES], OEM.LSTM_ONLY, {
        // One folder holding every language: tesseract.js reads `<langPath>/<code>.traineddata.gz`.
        langPath: linkLanguageData(cacheDir),
        gzip: true,
        cacheMethod: 'none',
      }),
    );
    return worker;
  };
  return {
    async read(image) {
      const recognized = await (await start()).recognize(toPgm(image));
      return recognized.data.text;
    },
    async close() {
      if (worker) await (await worker).terminate();
    },
  };
}

/** The packages keep each language in its own folder; tesseract.js wants them in one. */
function linkLanguageData(cacheDir: string): string {
  const path = join(cacheDir, 'ocr-languages');
  try {
    mkdirSync(path, { recursive: true });
    for (const code of OCR_LANGUAGES) {
      const packageDir = dirname(require.resolve(`@tesseract.js-data/${code}/package.json`));
      const target = join(packageDir, '4.0.0', `${code}.traineddata.gz`);
      if (!existsSync(target)) throw new Error(`missing ${code}`);
      const link = join(path, `${code}.traineddata.gz`);
      rmSync(link, { force: true });
      symlinkSync(target, link);
    }
    return path;
  } catch {
    throw new ExtractionFailure(
      'ocr_unavailable',
      'OCR is unavailable: the language data packages @tesseract.js-data/eng and @tesseract.js-data/kor are not installed; run `npm install` (with OCR_ENABLED=true) to read scanned pages.',
    );
  }
}

/** Binary PGM: Leptonica (inside Tesseract) reads it with no image codec involved. */
function toPgm(image: GrayImage): Buffer {
  return Buffer.concat([Buffer.from(`P5\n${image.width} ${image.height}\n255\n`), image.pixels]);
}

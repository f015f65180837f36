import { mkdir, rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { AppError } from '../errors.ts';
import type { StorageCap } from '../storage/document-repository.ts';
import type { DocumentService } from './document-service.ts';
import type { ExtractedDocument } from './extracted-document.ts';
import { CONTENT_TYPES, detectType, SNIFF_BYTES } from './extraction/detect-type.ts';
import { ExtractionFailure } from './extraction/extraction-failure.ts';
import type { ExtractionJob } from './extraction/extraction-process.ts';
import { type ExtractionLimits, ExtractionProcesses } from './extraction/run-extraction.ts';
import { type Release, Slots } from './slots.ts';
import { type ReceivedFile, receiveUpload } from './upload-file.ts';
import { checkName } from './upload-names.ts';

/** One part of a multipart upload, as the HTTP edge hands it over. */
export type UploadPart =
  | {
      type: 'file';
      fieldname: string;
      filename: string;
      stream: Readable & { truncated?: boolean };
    }
  | { type: 'field'; fieldname: string; value: string };

export interface IngestionSettings {
  /** A folder Parley owns; emptied at start. Uploads live there only while they are read. */
  uploadsDir: string;
  /** A folder Parley owns for OCR's language-data links. */
  ocrDir: string;
  maxBytes: number;
  limits: ExtractionLimits;
  concurrency: number;
  /** Uploads that may wait for an extraction slot; more are refused (503 `busy`). */
  queueMax: number;
  ocrEnabled: boolean;
}

/** Whose upload it is, decided once the whole form has been read, and its limits. */
export interface IngestAccess {
  /** The user whose private document it becomes, or undefined for a shared one. */
  owner(fields: ReadonlyMap<string, string>): string | undefined;
  /**
   * Counts the upload against the owner's limits, or throws (429); the storage limit, when
   * one holds, is checked again as the document is stored.
   */
  admit(owner: string, bytes: number, source: string): Promise<StorageCap | undefined>;
}

export interface IngestResult {
  chunks: number;
  filename: string;
  source: string;
}

/**
 * What an upload that finds the line full is told: 503 `busy` with Retry-After, as when every
 * database connection is in use. Not that case's 5 s: a place frees as an extraction ends
 * (seconds for a PDF, more with OCR), and each try sends the whole file again.
 */
export const LINE_FULL = {
  code: 'busy',
  message: 'Parley is busy reading other uploads; try again in 30 seconds.',
  retryAfterSeconds: 30,
} as const;

/** A progress line after this many pages, or this long since the last one (OCR is slow). */
const PROGRESS_EVERY_PAGES = 25;
const PROGRESS_EVERY_MS = 10_000;

/**
 * `POST /ingest`: receives the upload into a temporary file, decides its type, has its text
 * extracted in a child process (extraction/run-extraction.ts) and hands it to the document
 * store. The temporary file is removed whatever happens.
 */
/** How often leftovers of crashed ingestions are looked for (they count as such after 1 h). */
const SWEEP_EVERY_MS = 3_600_000;

export class IngestionService {
  readonly #documents: DocumentService;
  readonly #settings: IngestionSettings;
  readonly #logger: Logger;
  readonly #extracting: Slots;
  readonly #storing: Slots;
  readonly #extraction: ExtractionProcesses;
  #sweep: NodeJS.Timeout | undefined;

  constructor(documents: DocumentService, settings: IngestionSettings, logger: Logger) {
    this.#documents = documents;
    this.#settings = settings;
    this.#logger = logger;
    this.#extracting = new Slots(settings.concurrency, settings.queueMax);
    this.#storing = new Slots(settings.concurrency);
    this.#extraction = new ExtractionProcesses(settings.limits);
  }

  /**
   * Empties the uploads folder: files left by a crash or a kill are removed here. The rows a
   * crashed ingestion left hidden are removed now and every hour after, in the background:
   * without that they stayed until some later large upload (and take a user's storage).
   */
  async start(): Promise<void> {
    await rm(this.#settings.uploadsDir, { recursive: true, force: true });
    await mkdir(this.#settings.uploadsDir, { recursive: true });
    void this.#sweepAbandoned();
    this.#sweep = setInterval(() => void this.#sweepAbandoned(), SWEEP_EVERY_MS);
    this.#sweep.unref();
  }

  /** Stops the extraction processes (an upload still being read fails). */
  stop(): void {
    clearInterval(this.#sweep);
    this.#extraction.close();
  }

  async #sweepAbandoned(): Promise<void> {
    try {
      const removed = await this.#documents.deleteAbandonedWrites();
      if (removed > 0) this.#logger.info({ documents: removed }, 'abandoned uploads removed');
    } catch (error) {
      this.#logger.warn({ err: error }, 'abandoned uploads not removed yet');
    }
  }

  async ingest(
    parts: AsyncIterable<UploadPart>,
    access: IngestAccess,
    signal?: AbortSignal,
  ): Promise<IngestResult> {
    let upload: (ReceivedFile & { filename: string }) | undefined;
    const fields = new Map<string, string>();
    try {
      for await (const part of parts) {
        if (part.type === 'field') fields.set(part.fieldname, part.value);
        else if (part.fieldname !== 'file' || upload)
          part.stream.resume(); // not ours: drained
        else {
          upload = {
            filename: part.filename,
            ...(await receiveUpload(part.stream, this.#settings.uploadsDir, part.filename, {
              maxBytes: this.#settings.maxBytes,
              headBytes: SNIFF_BYTES,
            })),
          };
        }
      }
      if (!upload) {
        throw new AppError(
          'file_missing',
          422,
          'The multipart part "file" is required: attach the document as "file".',
        );
      }
      return await this.#process(upload, fields, access, signal);
    } finally {
      if (upload) await rm(upload.path, { force: true });
    }
  }

  async #process(
    upload: ReceivedFile & { filename: string },
    fields: Map<string, string>,
    access: IngestAccess,
    signal: AbortSignal | undefined,
  ): Promise<IngestResult> {
    const owner = access.owner(fields);
    const given = fields.get('source');
    const filename = checkName(
      'file name',
      upload.filename,
      given === undefined ? ' Send a "source" field to name the document.' : '',
    );
    const source = given === undefined ? filename : checkName('source', given);
    if (upload.bytes === 0) throw new AppError('file_empty', 422, 'The file is empty.');

    const detected = detectType(upload.head, filename);
    if ('unsupported' in detected) {
      throw new AppError(
        'unsupported_type',
        415,
        `The file is ${detected.unsupported}. Supported: PDF, plain text, Markdown, HTML and Word (.docx).`,
      );
    }
    const { kind } = detected;
    const started = performance.now();
    const log = this.#logger.child({ kind, bytes: upload.bytes });
    let cap: StorageCap | undefined;
    const extracting = await this.#extractionSlot(log, signal, async () => {
      if (owner !== undefined) cap = await access.admit(owner, upload.bytes, source);
    });
    const { document, extractedAt, storing } = await this.#extractThenWaitForStoring(
      extracting,
      {
        path: upload.path,
        kind,
        password: fields.get('password') || undefined,
        ocrEnabled: this.#settings.ocrEnabled,
        cacheDir: this.#settings.ocrDir,
      },
      log,
      signal,
    );
    let chunks: number;
    try {
      ({ chunks } = await this.#documents.ingest(
        { source, filename, contentType: CONTENT_TYPES[kind], bytes: upload.bytes, document },
        signal,
        owner,
        cap,
      ));
    } finally {
      storing();
    }
    log.info(
      {
        pages: document.pages.length,
        ocrPages: document.ocrPages.length,
        chunks,
        extractedMs: Math.round(extractedAt - started),
        totalMs: Math.round(performance.now() - started),
      },
      'document ingested',
    );
    return { chunks, filename, source };
  }

  /**
   * A place in the line for an extraction slot, taken before `admit` counts the upload against
   * its owner's limits (so a refused upload costs the user nothing, and a burst cannot slip
   * past the line while its uploads are counted); then the slot itself.
   */
  async #extractionSlot(
    log: Logger,
    signal: AbortSignal | undefined,
    admit: () => Promise<void>,
  ): Promise<Release> {
    const place = this.#extracting.join();
    if (!place) {
      log.info({ code: LINE_FULL.code, waiting: this.#extracting.waiting }, 'upload refused');
      throw new AppError(LINE_FULL.code, 503, LINE_FULL.message, {
        retryAfterSeconds: LINE_FULL.retryAfterSeconds,
      });
    }
    try {
      await admit();
      if (this.#extracting.busy) log.info({ waiting: this.#extracting.waiting }, 'upload queued');
      return await place.take(signal);
    } finally {
      place.leave();
    }
  }

  /**
   * Extracts the text, then waits for a storing slot, and only then gives the extraction slot
   * back. Storing has its own INGEST_CONCURRENCY slots, so at most that many ingestions write
   * to the database at once (another user's queries wait behind a few short batches, not
   * behind every upload's), and the next file is extracted while this one is stored. Keeping
   * the extraction slot meanwhile is the backpressure: when storing is slower, at most
   * INGEST_CONCURRENCY extracted documents (each up to INGEST_MAX_BYTES of text) wait in
   * memory, and the uploads behind them wait as files, in the line INGEST_QUEUE_MAX bounds.
   */
  async #extractThenWaitForStoring(
    extracting: Release,
    job: ExtractionJob,
    log: Logger,
    signal: AbortSignal | undefined,
  ): Promise<{ document: ExtractedDocument; extractedAt: number; storing: Release }> {
    try {
      const document = await this.#extraction
        .run(job, { signal, onProgress: progressLogger(log) })
        .catch((error: unknown) => {
          if (!(error instanceof ExtractionFailure)) throw error;
          log.info({ code: error.code }, 'extraction refused the file');
          throw new AppError(error.code, error.code === 'unsupported' ? 415 : 422, error.message);
        });
      const extractedAt = performance.now();
      if (this.#storing.busy)
        log.info({ waiting: this.#storing.waiting + 1 }, 'upload queued for storing');
      return { document, extractedAt, storing: await this.#storing.acquire(signal) };
    } finally {
      extracting();
    }
  }
}

/** Progress lines: counts only, never content. */
function progressLogger(log: Logger) {
  let lastAt = performance.now();
  return (pagesDone: number, pagesTotal: number) => {
    const now = performance.now();
    if (
      pagesDone % PROGRESS_EVERY_PAGES === 0 ||
      pagesDone === pagesTotal ||
      now - lastAt >= PROGRESS_EVERY_MS
    ) {
      lastAt = now;
      log.info({ pagesDone, pagesTotal }, 'extracting pages');
    }
  };
}

import type { Logger } from 'pino';
import { ensureModel, ModelUnavailableError } from './model-download.ts';
import { ModelDownloadingError, type ModelStatus } from './model-status.ts';

/** A chat that finds the download failed starts it again and waits this long for an answer. */
const RETRY_WAIT_MS = 1_500;

/**
 * The embedded model's file, fetched in the background from the moment Parley starts (a first
 * run does not wait for the first chat to begin a download of several GB), with its status
 * for `/health`. A chat never waits for the download: it is told how far it is. A failed or
 * interrupted download is tried again (resumed) by the next chat or restart.
 */
export class ModelFetch {
  readonly #options: { uri: string; dir: string; logger: Logger };
  #status: ModelStatus = { source: 'download', state: 'checking' };
  #running: Promise<string> | undefined;
  #path: string | undefined;
  #stop = new AbortController();

  constructor(options: { uri: string; dir: string; logger: Logger }) {
    this.#options = options;
  }

  status(): ModelStatus {
    return this.#status;
  }

  /**
   * Starts the download (or finds the file on disk); a call while one runs joins it.
   * `onDownloading` is called when bytes start to come (not when the file is on disk).
   */
  start(onDownloading?: () => void): Promise<string> {
    if (this.#path) return Promise.resolve(this.#path);
    this.#running ??= this.#fetch(onDownloading).finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** The file for the loader: ready, or a clear error now (downloading, or why it failed). */
  async path(): Promise<string> {
    if (this.#path) return this.#path;
    const settled = this.start().then(
      (path) => ({ path }),
      (error: unknown) => ({ error }),
    );
    const result = await Promise.race([
      settled,
      new Promise<undefined>((resolve) =>
        setTimeout(() => resolve(undefined), RETRY_WAIT_MS).unref(),
      ),
    ]);
    if (result && 'path' in result) return result.path;
    if (result && 'error' in result) throw result.error;
    const status = this.#status;
    throw new ModelDownloadingError(status.state === 'downloading' ? status : { percent: 0 });
  }

  /** Stops a download under way (at shutdown); what it fetched is kept and resumed later. */
  stop(): void {
    this.#stop.abort(new Error('Parley is stopping'));
    this.#stop = new AbortController();
  }

  async #fetch(onDownloading: (() => void) | undefined): Promise<string> {
    const { logger } = this.#options;
    let announced = false;
    try {
      const path = await ensureModel({
        ...this.#options,
        signal: this.#stop.signal,
        onProgress: (downloadedBytes, totalBytes, resumedFromBytes) => {
          if (!announced) {
            announced = true;
            onDownloading?.();
          }
          this.#status = {
            source: 'download',
            state: 'downloading',
            downloadedBytes,
            totalBytes,
            // 100 % is for a file verified on disk: the downloader reports every byte as
            // soon as it has all the chunks under way, which can still stall or fail.
            percent:
              totalBytes > 0 ? Math.min(99, Math.floor((downloadedBytes / totalBytes) * 100)) : 0,
            resumedFromBytes,
          };
        },
      });
      this.#path = path;
      this.#status = { source: 'download', state: 'ready' };
      return path;
    } catch (error) {
      const reason =
        error instanceof ModelUnavailableError ? error.message : 'the download was stopped';
      this.#status = { source: 'download', state: 'failed', reason };
      logger.warn({ err: error }, 'the embedded model is not available');
      throw error;
    }
  }
}

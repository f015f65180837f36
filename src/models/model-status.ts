import { ModelNotConfiguredError } from './chat-model.ts';

/**
 * Where the chat model stands, for `GET /health` and the web client's first run: a model
 * server is ready until a request finds nothing answering (unreachable) or is refused for its key
 * or model (refusing), until one is answered otherwise (it is not probed); the embedded model is being looked for
 * on disk, downloading (how far), on disk, or could not be had (why).
 */
export type ModelStatus =
  | { source: 'server' | 'file' | 'download'; state: 'ready' }
  | { source: 'download'; state: 'checking' }
  | {
      source: 'download';
      state: 'downloading';
      downloadedBytes: number;
      /** 0 until the host has said how large the file is. */
      totalBytes: number;
      percent: number;
      /** What an interrupted download had already fetched: it goes on from there. */
      resumedFromBytes: number;
    }
  | { source: 'file' | 'download'; state: 'failed'; reason: string }
  /** The last request to the model server found nothing answering, or was refused for its
   * key or model (learnt from requests made anyway, not probed). */
  | { source: 'server'; state: 'unreachable' | 'refusing'; reason: string };

/**
 * A chat asked for the embedded model while it downloads: answered at once (never a wait
 * of minutes with nothing to show), with how far the download is.
 */
export class ModelDownloadingError extends ModelNotConfiguredError {
  readonly percent: number;

  constructor(status: Extract<ModelStatus, { state: 'downloading' }> | { percent: number }) {
    super(
      `The model is still downloading (${status.percent} %${'totalBytes' in status && status.totalBytes > 0 ? `, ${gigabytes(status.downloadedBytes)} of ${gigabytes(status.totalBytes)} GB` : ''}). ` +
        'Try again when it is done: the web client shows its progress.',
    );
    Object.defineProperty(this, 'name', { value: 'ModelDownloadingError' });
    this.percent = status.percent;
  }
}

const gigabytes = (bytes: number) => (bytes / 1e9).toFixed(1);

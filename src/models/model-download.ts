import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createModelDownloader, type ModelDownloader, resolveModelFile } from 'node-llama-cpp';
import type { Logger } from 'pino';
import { fileProblem } from '../file-problem.ts';
import { type DataDirLock, DataDirLockedError, lockDataDir } from '../storage/data-dir-lock.ts';
import { ModelNotConfiguredError } from './chat-model.ts';
import { verifyGgufFile } from './llama/verify-gguf-file.ts';
import { hideUriSecrets, shownUri } from './shown-uri.ts';

/**
 * The model downloaded on first use when neither LLM_BASE_URL nor
 * LLM_MODEL_PATH is set: Qwen3.5 4B, Q4_K_M quantization (a file of a few GB).
 * See the README for why.
 */
export const DEFAULT_MODEL_URI = 'hf:unsloth/Qwen3.5-4B-GGUF:Q4_K_M';

/** The embedded model cannot be obtained; the message tells the operator what to set. */
export class ModelUnavailableError extends ModelNotConfiguredError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    // The base class types `name` as its own literal; report the real class anyway.
    Object.defineProperty(this, 'name', { value: 'ModelUnavailableError' });
  }
}

export type EnsureModelOptions = {
  /** `hf:<user>/<repo>:<quant>`, `hf:<user>/<repo>/<file>`, or an http(s) URL. */
  uri: string;
  /** Where models live, e.g. `DATA_DIR/models`. */
  dir: string;
  logger: Logger;
  signal?: AbortSignal;
  /** Give up when the server does not answer within this (default 15 s). */
  connectTimeoutMs?: number;
  /** Give up when no byte arrives for this long (default 60 s). */
  stallTimeoutMs?: number;
  /**
   * Bytes on disk so far and the file's size, as the download goes; `resumedFrom` is what an
   * earlier, interrupted attempt had fetched (0 for a fresh download).
   */
  onProgress?: (downloadedBytes: number, totalBytes: number, resumedFrom: number) => void;
};

const unavailable = (uri: string, reason: string, cause?: unknown) =>
  new ModelUnavailableError(
    `The embedded model could not be obtained from ${shownUri(uri)}: ${hideUriSecrets(reason, uri)}. ` +
      'Set LLM_MODEL_PATH to a local GGUF file, or LLM_BASE_URL to an OpenAI-compatible server.',
    { cause },
  );

const describe = (error: unknown): string => {
  const cause =
    error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return error instanceof Error ? `${error.message}${cause}` : String(error);
};

/** http(s) URLs keep their file name, so a finished download is found again offline. */
function localFileName(uri: string): string | undefined {
  if (!/^https?:\/\//.test(uri)) return undefined;
  return decodeURIComponent(basename(new URL(uri).pathname)) || undefined;
}

/** Fails in milliseconds on a refused connection instead of after the downloader's retries. */
async function checkReachable(uri: string, timeoutMs: number): Promise<void> {
  const url = /^https?:\/\//.test(uri)
    ? uri
    : uri.startsWith('hf:')
      ? 'https://huggingface.co/'
      : undefined;
  if (!url) return;
  const response = await fetch(url, { method: 'HEAD', signal: AbortSignal.timeout(timeoutMs) });
  if (response.status === 404 || response.status === 401 || response.status === 403) {
    throw new Error(`the server answered ${response.status}`);
  }
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

// node-llama-cpp's downloader (ipull) can leave an incomplete file under the
// final name when a download is cancelled, so a file counts as downloaded only
// next to the marker written after it was verified.
const markerOf = (path: string) => `${path}.verified`;

/**
 * A download in progress: ipull's file (the data so far, then its progress record) and ours
 * saying which URI and size it was started for. A partial is only resumed for the same
 * ones, so bytes of two different files (another model, or a file replaced upstream with
 * one of another size) are never joined. The URI is recorded as `shownUri` shows it: a
 * presigned URL's signature would otherwise stay on disk with the partial (whoever reads the
 * data directory could fetch the file with it), and a URL signed again for the same file
 * still resumes.
 */
const partialOf = (path: string) => ({ data: `${path}.ipull`, origin: `${path}.download.json` });

/**
 * ipull renames a cancelled download to the final name (it counts a cancel as "ended"), data
 * and progress record included: such a file, never verified, goes back to being a partial.
 */
async function keepAsPartial(path: string): Promise<void> {
  if (!existsSync(path) || existsSync(markerOf(path))) return;
  await rename(path, partialOf(path).data);
}

async function startedAs(
  originPath: string,
  expected: { uri: string; size: number },
): Promise<boolean> {
  try {
    const origin = JSON.parse(await readFile(originPath, 'utf8')) as Record<string, unknown>;
    // Records written before the URI was shown without its secrets hold it whole.
    const sameUri = origin.uri === shownUri(expected.uri) || origin.uri === expected.uri;
    return sameUri && origin.size === expected.size;
  } catch {
    return false;
  }
}

async function isMarkedComplete(path: string): Promise<boolean> {
  try {
    const marker = JSON.parse(await readFile(markerOf(path), 'utf8')) as { size?: unknown };
    return marker.size === (await stat(path)).size;
  } catch {
    return false;
  }
}

async function findExisting(options: EnsureModelOptions): Promise<string | undefined> {
  const fileName = localFileName(options.uri);
  try {
    return await resolveModelFile(options.uri, {
      directory: options.dir,
      download: false, // offline: only look for the file a finished download left
      cli: false,
      ...(fileName ? { fileName } : {}),
    });
  } catch {
    return undefined;
  }
}

async function download(options: EnsureModelOptions): Promise<string> {
  const { uri, logger } = options;
  await checkReachable(uri, options.connectTimeoutMs ?? 15_000);
  const fileName = localFileName(uri);
  let lastLogged = -1;
  let lastProgressAt = Date.now();
  let resumedFrom = 0;
  const create = () =>
    withTimeout(
      createModelDownloader({
        modelUri: uri,
        dirPath: options.dir,
        ...(fileName ? { fileName } : {}),
        // A cut-short download is kept (as `<file>.ipull`, progress included) and resumed by
        // the next attempt, also after a restart; see `partialOf`.
        deleteTempFileOnCancel: false,
        onProgress: ({ totalSize, downloadedSize }) => {
          lastProgressAt = Date.now();
          options.onProgress?.(downloadedSize, totalSize, resumedFrom);
          const percent = totalSize > 0 ? Math.floor((downloadedSize / totalSize) * 10) * 10 : 0;
          if (percent <= lastLogged) return;
          lastLogged = percent;
          logger.info(
            { uri: shownUri(uri), downloadedSize, totalSize, percent },
            'downloading the embedded model',
          );
        },
      }),
      options.connectTimeoutMs ?? 15_000,
      'resolving the model file',
    );
  let downloader: ModelDownloader = await create();
  const partial = partialOf(downloader.entrypointFilePath);
  const started = { uri, size: downloader.totalSize };
  if (existsSync(partial.data) && !(await startedAs(partial.origin, started))) {
    // The downloader has just loaded that file's progress: start over with an empty one.
    logger.warn({ path: partial.data }, 'discarding a partial download of another model file');
    await downloader.cancel({ deleteTempFile: true });
    downloader = await create();
  }
  await writeFile(partial.origin, JSON.stringify({ ...started, uri: shownUri(uri) }));
  resumedFrom = downloader.downloadedSize;
  options.onProgress?.(resumedFrom, downloader.totalSize, resumedFrom);
  logger.info(
    {
      uri: shownUri(uri),
      file: downloader.entrypointFilePath,
      totalSize: downloader.totalSize,
      resumedFrom,
    },
    resumedFrom > 0 ? 'model download resumed' : 'model download started',
  );

  const stalled = new AbortController();
  const stallMs = options.stallTimeoutMs ?? 60_000;
  lastProgressAt = Date.now();
  const watchdog = setInterval(
    () => {
      if (Date.now() - lastProgressAt > stallMs)
        stalled.abort(new Error(`no data for ${stallMs} ms`));
    },
    Math.min(stallMs, 1_000),
  );
  catchWriteFailures(downloader, (error) =>
    stalled.abort(
      new Error(`the model could not be written to ${options.dir}: ${fileProblem(error)}`, {
        cause: error,
      }),
    ),
  );
  const stop = AbortSignal.any([stalled.signal, ...(options.signal ? [options.signal] : [])]);
  // Cancelled here rather than through download()'s own signal, whose cancel nobody awaits:
  // ipull renames the partial while it closes, and it must be back in place before this
  // attempt is reported as failed (or the process exits at shutdown).
  let cancelling: Promise<void> | undefined;
  const cancel = () => {
    cancelling = downloader
      .cancel({ deleteTempFile: false })
      .then(() => keepAsPartial(downloader.entrypointFilePath));
  };
  stop.addEventListener('abort', cancel, { once: true });
  try {
    const path = await downloader.download().finally(() => cancelling);
    stop.throwIfAborted();
    // A split model's entry file is its first part: compare with that part's size.
    const size =
      downloader.filesInfo.find((f) => f.filePath === path)?.totalSize ?? downloader.totalSize;
    const problem = await verifyGgufFile(path, size);
    if (problem) {
      // Never leave a bad file where the next start trusts it, nor resume into it.
      await Promise.all([rm(path, { force: true }), rm(partial.origin, { force: true })]);
      throw new Error(`the downloaded file is unusable: ${problem}`);
    }
    await writeFile(markerOf(path), JSON.stringify({ uri, size }));
    await rm(partial.origin, { force: true });
    logger.info({ uri: shownUri(uri), path, size }, 'model download finished');
    return path;
  } catch (error) {
    throw stop.aborted ? stop.reason : error;
  } finally {
    stop.removeEventListener('abort', cancel);
    clearInterval(watchdog);
  }
}

/**
 * Returns the local path of the model named by `uri`, downloading it into
 * `dir` on first use (with progress logs; a dropped connection is resumed within the
 * download, and a download cut short by a stall, an abort or a restart resumes on the next
 * attempt).
 * Throws ModelUnavailableError when it cannot be had; an abort of `signal`
 * is rethrown as is.
 */
/**
 * The downloader (ipull) writes each piece of the file, and its progress record, in promises
 * whose rejection nothing handles: a write that failed (a full disk, an I/O error) was an
 * unhandled rejection, and Node ended Parley. Each file's writes are wrapped here: the first
 * failure is handed to `onFailure` (which stops the download, keeping what is on disk to
 * resume once there is room), and nothing more is written after it, so no progress record
 * claims a piece that never reached the disk.
 */
function catchWriteFailures(
  downloader: ModelDownloader,
  onFailure: (error: NodeJS.ErrnoException) => void,
): void {
  type Write = (...args: unknown[]) => Promise<unknown>;
  const files = (downloader as unknown as { _specificFileDownloaders?: unknown[] })
    ._specificFileDownloaders;
  let failed = false;
  for (const file of files ?? []) {
    const stream = (file as { options?: { writeStream?: { write?: Write } } }).options?.writeStream;
    const write = stream?.write?.bind(stream);
    if (!stream || !write) continue;
    stream.write = (...args) => {
      if (failed) return Promise.resolve();
      return write(...args).catch((error: unknown) => {
        if (failed) return;
        failed = true;
        onFailure(error as NodeJS.ErrnoException);
      });
    };
  }
}

export async function ensureModel(options: EnsureModelOptions): Promise<string> {
  await mkdir(options.dir, { recursive: true });
  let lock: DataDirLock | undefined;
  try {
    lock = await holdModelsDir(options);
    return await findOrDownload(options);
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    if (error instanceof ModelUnavailableError) throw error;
    throw unavailable(options.uri, describe(error), error);
  } finally {
    await lock?.release();
  }
}

/**
 * The models folder, for this process alone until the model is there. Processes that share
 * it (PARLEY_WORKERS without a model server) each get the model at start: downloading into
 * the same partial file at once, one renamed it away from under the other, whose download
 * failed. Now one downloads while the others wait, then find its verified file. The lock
 * (that of the data directory, on this folder) is released by the kernel if its holder dies.
 */
async function holdModelsDir(options: EnsureModelOptions): Promise<DataDirLock> {
  let told = false;
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      return await lockDataDir(options.dir);
    } catch (error) {
      if (!(error instanceof DataDirLockedError)) throw error;
      if (!told) {
        options.logger.info(
          { dir: options.dir },
          'another process is getting the embedded model into this folder: waiting for it',
        );
        told = true;
      }
      await sleep(MODELS_DIR_RETRY_MS, undefined, options.signal ? { signal: options.signal } : {});
    }
  }
}

/** How often a process waiting for another's download asks whether it is done. */
const MODELS_DIR_RETRY_MS = 500;

async function findOrDownload(options: EnsureModelOptions): Promise<string> {
  const existing = await findExisting(options);
  if (existing && (await isMarkedComplete(existing))) {
    const problem = await verifyGgufFile(existing);
    if (!problem) return existing;
    options.logger.warn(
      { path: existing, problem },
      'discarding the model file and downloading again',
    );
    await Promise.all([rm(existing, { force: true }), rm(markerOf(existing), { force: true })]);
  } else if (existing) {
    // An interrupted download under the final name (or a file put there by hand: those
    // belong in LLM_MODEL_PATH). The download resumes it only if it started it.
    await keepAsPartial(existing);
  }
  return download(options);
}

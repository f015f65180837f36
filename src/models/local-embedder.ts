import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Embedder } from '../documents/embedder.ts';

export interface LocalEmbedderOptions {
  /** A Hugging Face model id with ONNX weights (transformers.js layout), or a local folder. */
  model: string;
  dataDir: string;
  /** After a failed load, how long before the next attempt. */
  retryMs: number;
  /** Texts per forward pass. */
  batchSize: number;
  logger: Logger;
  /** Where to download from; transformers.js's default (the Hugging Face Hub) when unset. */
  remoteHost?: string | undefined;
}

type Extractor = (
  texts: string[],
  options: { pooling: 'mean'; normalize: boolean },
) => Promise<{ tolist(): number[][] }>;

/**
 * A sentence-embedding model run in-process by transformers.js (ONNX Runtime on the CPU).
 * Downloaded on first use into `DATA_DIR/models`, with progress in the log. When it cannot be
 * had (offline, no such model) `ready()` answers false after one warning, and tries again
 * after `retryMs`, so that a model placed there or a network that comes back is picked up
 * without a restart. E5 models get their `query: ` / `passage: ` prefixes.
 */
export function localEmbedder(options: LocalEmbedderOptions): Embedder {
  const { logger } = options;
  const prefixes = /e5/i.test(options.model)
    ? { query: 'query: ', passage: 'passage: ' }
    : { query: '', passage: '' };
  let extractor: Extractor | undefined;
  let loading: Promise<boolean> | undefined;
  let failedAt = Number.NEGATIVE_INFINITY;
  let warned = false;

  const load = async (): Promise<boolean> => {
    try {
      const transformers = await import('@huggingface/transformers');
      transformers.env.cacheDir = join(options.dataDir, 'models');
      if (options.remoteHost) transformers.env.remoteHost = options.remoteHost.replace(/\/?$/, '/');
      const logged = new Set<string>();
      const pipe = await transformers.pipeline('feature-extraction', options.model, {
        dtype: 'q8',
        progress_callback: (info) => {
          if (info.status !== 'progress') return;
          const decile = Math.floor(info.progress / 10) * 10;
          const key = `${info.file}:${decile}`;
          if (logged.has(key)) return;
          logged.add(key);
          logger.info(
            { model: options.model, file: info.file, percent: decile, bytes: info.total },
            'downloading the embedding model',
          );
        },
      });
      extractor = pipe as unknown as Extractor;
      logger.info({ model: options.model }, 'embedding model ready: hybrid retrieval is on');
      return true;
    } catch (error) {
      failedAt = Date.now();
      if (!warned) {
        warned = true;
        logger.warn(
          { model: options.model, cause: error instanceof Error ? error.message : String(error) },
          'the embedding model cannot be loaded (offline?): document search is lexical only; ' +
            'Parley retries later and embeds the documents stored meanwhile',
        );
      }
      return false;
    } finally {
      loading = undefined;
    }
  };

  const run = async (texts: string[], signal?: AbortSignal): Promise<number[][]> => {
    if (!extractor) throw new Error('the embedding model is not loaded');
    const vectors: number[][] = [];
    for (let i = 0; i < texts.length; i += options.batchSize) {
      // A forward pass cannot be stopped: a job told to stop (shutdown, its budget) stops
      // between them.
      signal?.throwIfAborted();
      const output = await extractor(texts.slice(i, i + options.batchSize), {
        pooling: 'mean',
        normalize: true,
      });
      vectors.push(...output.tolist());
    }
    return vectors;
  };

  return {
    id: `local:${options.model}`,
    get available() {
      return extractor !== undefined;
    },
    async ready() {
      if (extractor) return true;
      if (loading) return loading;
      if (Date.now() - failedAt < options.retryMs) return false;
      loading = load();
      return loading;
    },
    embedDocuments: (texts, signal) =>
      run(
        texts.map((text) => prefixes.passage + text),
        signal,
      ),
    embedQuery: async (text, signal) => (await run([prefixes.query + text], signal))[0] as number[],
  };
}

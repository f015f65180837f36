import type { Logger } from 'pino';
import { type Config, ConfigError } from '../config.ts';
import type { Embedder } from '../documents/embedder.ts';
import { localEmbedder } from './local-embedder.ts';
import { openAiEmbedder } from './openai-embedder.ts';

export const DEFAULT_LOCAL_EMBEDDING_MODEL = 'Xenova/multilingual-e5-small';
export const DEFAULT_OPENAI_EMBEDDING_MODEL = 'text-embedding-3-small';

/** The embedder EMBEDDINGS_PROVIDER names; undefined for `none` (lexical retrieval only). */
export function createEmbedder(
  config: Pick<
    Config,
    | 'EMBEDDINGS_PROVIDER'
    | 'EMBEDDINGS_BASE_URL'
    | 'EMBEDDINGS_TIMEOUT_MS'
    | 'EMBEDDINGS_API_KEY'
    | 'EMBEDDINGS_MODEL'
    | 'EMBEDDINGS_MODEL_HOST'
    | 'EMBEDDINGS_BATCH_SIZE'
    | 'EMBEDDINGS_MAX_RETRIES'
    | 'EMBEDDINGS_RETRY_MS'
    | 'DATA_DIR'
  >,
  logger: Logger,
): Embedder | undefined {
  switch (config.EMBEDDINGS_PROVIDER) {
    case 'none':
      return undefined;
    case 'openai':
      if (!config.EMBEDDINGS_BASE_URL) {
        throw new ConfigError(
          'Invalid configuration:\n  EMBEDDINGS_BASE_URL: is required when EMBEDDINGS_PROVIDER=openai',
        );
      }
      return openAiEmbedder({
        baseUrl: config.EMBEDDINGS_BASE_URL,
        apiKey: config.EMBEDDINGS_API_KEY,
        model: config.EMBEDDINGS_MODEL ?? DEFAULT_OPENAI_EMBEDDING_MODEL,
        batchSize: config.EMBEDDINGS_BATCH_SIZE,
        maxRetries: config.EMBEDDINGS_MAX_RETRIES,
        timeoutMs: config.EMBEDDINGS_TIMEOUT_MS,
      });
    case 'local':
      return localEmbedder({
        model: config.EMBEDDINGS_MODEL ?? DEFAULT_LOCAL_EMBEDDING_MODEL,
        dataDir: config.DATA_DIR,
        retryMs: config.EMBEDDINGS_RETRY_MS,
        batchSize: config.EMBEDDINGS_BATCH_SIZE,
        remoteHost: config.EMBEDDINGS_MODEL_HOST,
        logger,
      });
  }
}

import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { embedMany } from 'ai';
import type { Embedder } from '../documents/embedder.ts';
import { createBoundedFetch } from './answer-bound.ts';

/**
 * The most one embeddings answer may carry: a batch's vectors as JSON floats, each number at
 * most ~24 bytes (`-0.012345678901234567,`), of up to 8192 dimensions (the largest models have
 * 4096), plus 1 MiB for the rest (usage, ids, whitespace). 32 texts make ~7 MiB.
 */
export const embeddingsAnswerMaxBytes = (batchSize: number) => 1024 * 1024 + batchSize * 8192 * 24;

export interface OpenAiEmbedderOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  model: string;
  /** Texts per request. */
  batchSize: number;
  /** Retries of a request that failed (429, 5xx, refused), with backoff. */
  maxRetries: number;
  /**
   * Longest one batch's call may take, its answer read whole and its retries included. A
   * server that stalls mid-answer held the backfill's one batch for its whole 5 min budget,
   * and the dimension probe at start (which has no caller to end it) for ever, and with it
   * every later batch and the stop.
   */
  timeoutMs: number;
}

/** Any OpenAI-compatible `POST /v1/embeddings` (OpenAI, Ollama, vLLM, llama.cpp, TEI…). */
export function openAiEmbedder(options: OpenAiEmbedderOptions): Embedder {
  const provider = createOpenAICompatible({
    name: 'embeddings',
    baseURL: options.baseUrl,
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
    fetch: createBoundedFetch('embeddings server', embeddingsAnswerMaxBytes(options.batchSize)),
  });
  const model = provider.embeddingModel(options.model);
  const embed = async (texts: readonly string[], signal?: AbortSignal) => {
    const vectors: number[][] = [];
    for (let i = 0; i < texts.length; i += options.batchSize) {
      const { embeddings } = await embedMany({
        model,
        values: texts.slice(i, i + options.batchSize),
        maxRetries: options.maxRetries,
        maxParallelCalls: 1,
        abortSignal: signal
          ? AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)])
          : AbortSignal.timeout(options.timeoutMs),
      });
      vectors.push(...embeddings);
    }
    return vectors;
  };
  return {
    id: `openai:${options.model}`,
    available: true,
    ready: async () => true,
    embedDocuments: embed,
    embedQuery: async (text, signal) => (await embed([text], signal))[0] as number[],
  };
}

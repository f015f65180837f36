/**
 * Settings for a Parley whose embeddings come from the fake model server at `url`, in batches
 * of `batch` texts, with small chunks (32 tokens, no overlap) so a few documents make many
 * batches: what the backfill tests (a SIGTERM mid-backfill, replicas sharing it) need.
 */
export const backfillEnv = (url: string, model: string, batch: number) => ({
  EMBEDDINGS_PROVIDER: 'openai',
  EMBEDDINGS_BASE_URL: url,
  EMBEDDINGS_MODEL: model,
  EMBEDDINGS_BATCH_SIZE: String(batch),
  EMBEDDINGS_MAX_RETRIES: '0',
  CHUNK_MAX_TOKENS: '32',
  CHUNK_OVERLAP_TOKENS: '0',
});

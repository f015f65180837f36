import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { searchThroughChat } from '../support/search-through-chat.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * An embeddings server that answers 200 with fewer vectors than it was sent texts: the
 * background job must save nothing of that batch (its texts would be paired with the wrong
 * vectors, or none), log the failure without any document text, and try the batch again.
 *
 * Through the OpenAI-compatible provider the AI SDK's `embedMany` rejects the short answer
 * itself (InvalidResponseDataError), before the job's own count check (embedding-job.ts) is
 * reached, and error messages other than Parley's AppErrors are never logged
 * (error-log-fields.ts): so the log names the failure by its type, not "returned N vectors
 * for M texts". The job's own check, and its message, are tested in embedding-job.test.ts.
 *
 * On both engines, each with pgvector (CI builds it for the PostgreSQL server).
 *
 * The retry is never left to the clock: RETRY_MS is far longer than the test, so the state
 * before the retry is seen however slow the machine; the batch is then tried again by a
 * restart on the same data, whose start drain embeds what has no vector (as the retry would).
 */
const FIRST = 'The quokka climbs low shrubs on Rottnest Island at dusk while the ferry leaves.';
const SECOND = 'Glaciers carve deep fjords along the cold northern coast over many thousand years.';
const VECTORS: [marker: string, vector: number[]][] = [
  ['quokka', [1, 0, 0, 0]],
  ['marsupial', [1, 0, 0, 0]], // the query: near the first chunk, sharing none of its words
  ['Glaciers', [0, 1, 0, 0]],
];
const embed = (text: string) =>
  VECTORS.find(([marker]) => text.includes(marker))?.[1] ?? [0, 0, 0, 0];
/** Far longer than the test: no retry can come by itself while the state before it is checked. */
const RETRY_MS = 3_600_000;

describe.each(ENGINES)(
  'an embeddings answer with fewer vectors than texts, on the %s engine',
  (engine) => {
    let llm: FakeLlmServer;
    let setup: EngineSetup;
    let parley: RunningParley;
    let dataDir: string;
    const env = () => ({
      ...setup.env,
      EMBEDDINGS_PROVIDER: 'openai',
      EMBEDDINGS_BASE_URL: llm.url,
      EMBEDDINGS_MODEL: 'fake-embed',
      EMBEDDINGS_MAX_RETRIES: '0',
      EMBEDDINGS_RETRY_MS: String(RETRY_MS),
      CHUNK_MAX_TOKENS: '32',
      CHUNK_OVERLAP_TOKENS: '0',
    });

    const search = (query: string) => searchThroughChat(parley, llm, query);
    /** The embeddings requests that carried the document's texts (not a query's). */
    const batches = () =>
      llm.requests
        .filter((request) => request.path === '/v1/embeddings')
        .map((request) => (request.body as { input: string[] }).input)
        .filter((input) => input.some((text) => text.includes('quokka')));

    beforeAll(async () => {
      setup = await engineSetup(engine, {}, { embed });
      ({ llm, dataDir } = setup);
      parley = await startParley({ dataDir, env: env() });
      const ready = await parley.waitForLog((line) => line.msg === 'database ready');
      expect(ready.vector).toBe(true);
    }, 120_000);
    afterEach(() => {
      llm.assertNoUnexpected();
      llm.assertAllConsumed();
    });
    afterAll(async () => {
      await parley?.stop();
      await setup?.cleanup();
    });

    it('saves nothing of the batch, logs the failure without the text, and embeds it when tried again', async () => {
      // The first embeddings request (the document's batch of two texts) is answered 200 with
      // one valid item: the second text's vector, as if the server had dropped the first.
      llm.failEmbeddings({
        kind: 'http-error',
        status: 200,
        headers: {},
        body: {
          object: 'list',
          data: [{ object: 'embedding', index: 0, embedding: embed(SECOND) }],
          model: 'fake-embed',
          usage: { prompt_tokens: 20, total_tokens: 20 },
        },
      });
      const answer = await ingest(parley, [
        file('nature.txt', `${FIRST}\n\n${SECOND}`),
        { name: 'source', value: 'nature.txt' },
      ]);
      expect(answer).toMatchObject({ status: 200, body: { chunks: 2 } });

      const failed = await parley.waitForLog(
        (line) => line.msg === 'background job failed; will retry',
        30_000,
      );
      expect(failed).toMatchObject({
        job: 'embedding_batch',
        errorKind: 'InvalidResponseDataError',
        retryInMs: RETRY_MS,
      });
      expect(batches()).toHaveLength(1);

      // Before the retry: neither chunk has a vector, so a query sharing none of their words
      // finds nothing (with the mismatched answer saved, the first would have the second's).
      const before = await search('marsupial');
      expect(before.hits).toEqual([]);
      expect(batches()).toHaveLength(1); // no retry came in between (RETRY_MS is an hour)

      // Tried again (by the restart's start drain, on the same data): a correct answer this
      // time, and both chunks get their own vectors.
      await parley.settled();
      const firstOutput = parley.output();
      await parley.stop();
      parley = await startParley({ dataDir, env: env() });
      await waitFor(() => batches().length >= 2, 30_000);
      await parley.waitForLog((line) => line.msg === 'chunks embedded', 30_000);
      const after = await search('marsupial');
      expect(after.retrieval).toBe('hybrid');
      expect(after.hits[0]?.source).toBe('nature.txt');
      expect(after.hits[0]?.text).toContain('quokka');

      // The logs name the failure but no text of the document.
      await parley.settled();
      for (const output of [firstOutput, parley.output()]) {
        for (const words of ['quokka', 'Rottnest', 'Glaciers', 'fjords']) {
          expect(output).not.toContain(words);
        }
      }
    }, 90_000);
  },
);

import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createJobEngine } from '../../src/background/job-engine.ts';
import { JobRunner } from '../../src/background/job-runner.ts';
import type { Embedder } from '../../src/documents/embedder.ts';
import { EmbeddingDimension } from '../../src/documents/embedding-dimension.ts';
import { embeddingJob } from '../../src/documents/embedding-job.ts';
import { VectorStore } from '../../src/storage/vector-store.ts';
import { ENGINES, type OpenTestDatabase, openTestDatabase } from '../support/engines.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * The embedding backfill, driven by the real job runner (pg-boss) over the real vector store,
 * with the embedding model scripted: a model (or a provider other than the AI SDK's OpenAI
 * client, which checks the count itself) that answers a different number of vectors than it
 * was sent texts must get nothing of that batch saved (its texts would be paired with the
 * wrong vectors), and the batch is tried again. While the model cannot be had, kicks cost
 * nothing.
 *
 * On both engines, each with pgvector (CI builds it for the PostgreSQL server).
 */
const TEXTS = ['alpha chunk text', 'beta chunk text', 'gamma chunk text'];
const RETRY_MS = 100;
let models = 0;

/** A scripted model: `answer` picks the vectors for a batch; `ready` calls are counted. */
function scriptedEmbedder(
  answer: (texts: readonly string[]) => number[][],
  isReady: () => boolean = () => true,
) {
  const calls = { ready: 0, batches: [] as string[][] };
  const embedder: Embedder = {
    id: `scripted:${++models}`, // a vector space of its own: every chunk is missing in it
    available: true,
    ready: async () => {
      calls.ready++;
      return isReady();
    },
    embedDocuments: async (texts) => {
      calls.batches.push([...texts]);
      return answer(texts);
    },
    embedQuery: async () => [1, 0, 0],
  };
  return { embedder, calls };
}
const vectorOf = (text: string) => [TEXTS.indexOf(text) + 1, 1, 0];

describe.each(ENGINES)('the embedding backfill, on the %s engine', (engine) => {
  let opened: OpenTestDatabase | undefined;
  let vectors: VectorStore;
  const logs: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(line, _encoding, done) {
        logs.push(JSON.parse(String(line)));
        done();
      },
    }),
  );

  const runners: JobRunner[] = [];
  /** A started runner with the embedding kind alone, on the test's database. */
  const runnerFor = async (
    embedder: Embedder,
    batchSize: number,
    retryMs = RETRY_MS,
    dimension = new EmbeddingDimension(),
    store = vectors,
  ) => {
    if (!opened) throw new Error('no database');
    const boss = createJobEngine(opened.database.db.$client, logger, {
      leaseSeconds: 60,
    });
    const runner = new JobRunner(boss, logger);
    runner.add(
      embeddingJob({
        embedder,
        dimension,
        vectors: store,
        logger,
        batchSize,
        retryMs,
      }),
    );
    runners.push(runner);
    await runner.start();
    return runner;
  };
  const logged = (msg: string) => logs.filter((line) => line.msg === msg);
  const missing = async (embedder: Embedder) =>
    (await vectors.missing(embedder.id, undefined, 100)).map((item) => item.content).sort();

  beforeAll(async () => {
    opened = await openTestDatabase(engine);
    expect(opened.database.capabilities.vector).toBe(true);
    vectors = new VectorStore(opened.database.db);
    const client = opened.database.db.$client;
    const { rows } = await client.query<{ id: number }>(
      `INSERT INTO documents (source, chunk_count) VALUES ('texts.txt', $1) RETURNING id`,
      [TEXTS.length],
    );
    for (const [index, content] of TEXTS.entries()) {
      await client.query(
        `INSERT INTO chunks (document_id, chunk_index, content, content_hash, term_count)
         VALUES ($1, $2, $3, md5($3), 3)`,
        [rows[0]?.id, index, content],
      );
    }
  }, 60_000);
  // A failed batch is tried again by the runner itself after RETRY_MS: stopped after each test.
  afterEach(async () => {
    for (const runner of runners.splice(0)) await runner.stop();
    logs.length = 0;
    // A job a test's runner queued and never ran would be taken by the next test's runner,
    // which then embeds without asking its own model whether it is ready: each test starts
    // with an empty queue.
    await opened?.database.db.$client.query('DELETE FROM pgboss.job');
  });
  afterAll(() => opened?.close());

  /** The first failed batch's log line, once the runner has paused after it. */
  const firstFailure = async () => {
    await waitFor(() => logged('background job failed; will retry').length > 0, 20_000);
    return logged('background job failed; will retry')[0];
  };

  it('saves nothing of a batch answered with fewer vectors than texts, and says so', async () => {
    // One vector short: the second text's, as if the model had dropped the first.
    const { embedder } = scriptedEmbedder((texts) => texts.slice(1).map(vectorOf));
    await runnerFor(embedder, 2, 60_000);
    const failed = await firstFailure();
    expect((failed?.err as { message?: string } | undefined)?.message).toBe(
      'the embedder returned 1 vectors for 2 texts',
    );
    expect(await missing(embedder)).toEqual([...TEXTS].sort());
  });

  it('saves nothing of a batch answered with more vectors than texts', async () => {
    const { embedder } = scriptedEmbedder((texts) => [[9, 9, 9], ...texts.map(vectorOf)]);
    await runnerFor(embedder, 2, 60_000);
    const failed = await firstFailure();
    expect((failed?.err as { message?: string } | undefined)?.message).toBe(
      'the embedder returned 3 vectors for 2 texts',
    );
    expect(await missing(embedder)).toEqual([...TEXTS].sort());
  });

  it('tries the batch again, and saves it once the answer is right', async () => {
    let wrong = true;
    const { embedder, calls } = scriptedEmbedder((texts) => {
      const answer = texts.map(vectorOf);
      if (wrong) answer.pop();
      wrong = false;
      return answer;
    });
    await runnerFor(embedder, 2);
    await firstFailure();
    // The runner tries again by itself once the pause after a failure (RETRY_MS) is over.
    await waitFor(async () => (await missing(embedder)).length === 0, 20_000);
    expect(calls.batches[1]).toEqual(calls.batches[0]); // the same batch, again
  });

  it('does nothing on kicks while the model cannot be had, and looks again when the pause ends', async () => {
    let ready = false;
    const { embedder, calls } = scriptedEmbedder(
      (texts) => texts.map(vectorOf),
      () => ready,
    );
    const runner = await runnerFor(embedder, 3, 1_500);
    await waitFor(() => calls.ready === 1, 10_000);
    // Every ingestion and every search kicks the kind: while paused, none asks the model (or
    // the database) again, and none adds a timer of its own.
    for (let i = 0; i < 5; i++) runner.kick('embedding_batch');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(calls.ready).toBe(1);
    ready = true;
    // The pause's one timer sweeps once it is over: the model is asked again, and embeds.
    await waitFor(async () => (await missing(embedder)).length === 0, 10_000);
    expect(calls.ready).toBeGreaterThanOrEqual(2);
  });

  /** The model's rows: each text's vector dimension, or null where it recorded none. */
  const stored = async (embedder: Embedder) => {
    const { rows } = await (opened as OpenTestDatabase).database.db.$client.query<{
      content: string;
      dims: number | null;
    }>(
      `SELECT c.content, vector_dims(e.embedding) AS dims
       FROM chunk_embeddings e JOIN chunks c ON c.content_hash = e.content_hash
       WHERE e.model = $1`,
      [embedder.id],
    );
    return Object.fromEntries(rows.map((row) => [row.content, row.dims]));
  };

  it.each([
    ['not finite, first and in the middle', (i: number) => (i < 2 ? [Number.NaN, 1, 0] : null)],
    ['infinite, in the middle', (i: number) => (i === 1 ? [1, Number.POSITIVE_INFINITY, 0] : null)],
    ['zero, first', (i: number) => (i === 0 ? [0, 0, 0] : null)],
    ['of another dimension than the rest, in the middle', (i: number) => (i === 1 ? [1, 1] : null)],
    // No usable vector in the batch at all: no dimension to learn from it.
    ['empty, every one of the batch', (_: number) => []],
  ])(
    'records a text whose vector is %s as having none, saves the rest, and ends',
    async (_, bad) => {
      const { embedder, calls } = scriptedEmbedder((texts) =>
        texts.map((text, i) => bad(i) ?? vectorOf(text)),
      );
      await runnerFor(embedder, 3, 60_000);
      await waitFor(() => logged('chunks embedded').length > 0, 20_000);
      expect(calls.batches).toHaveLength(1); // not asked again
      const [batch] = calls.batches as [string[]];
      expect(await stored(embedder)).toEqual(
        Object.fromEntries(batch.map((text, i) => [text, bad(i) ? null : 3])),
      );
      expect(await missing(embedder)).toEqual([]);
      expect(logged('background job failed; will retry')).toEqual([]);
      expect(
        logged(
          'the embedding model gave no usable vector for some chunks: they are found by their words only',
        )[0],
      ).toMatchObject({ model: embedder.id, batch: 3 });
    },
  );

  it('embeds every missing chunk a batch at a time, each batch once, and says when it is done', async () => {
    const { embedder, calls } = scriptedEmbedder((texts) => texts.map(vectorOf));
    // A sweep can read the vectors between the last batch's save and that batch's end (on
    // another connection, or while the save's answer is on its way back). Made certain here:
    // the last save returns only once a sweep has run after it. That sweep found nothing
    // missing and said "done" with the last batch not counted (embedded: 2, then 1).
    let runner: JobRunner | undefined;
    const store = new (class extends VectorStore {
      override async save(...args: Parameters<VectorStore['save']>) {
        await super.save(...args);
        if (args[1].length > 0 && (await missing(embedder)).length === 0) {
          await runner?.sweep('embedding_batch');
        }
      }
    })((opened as OpenTestDatabase).database.db);
    runner = await runnerFor(embedder, 1, RETRY_MS, undefined, store);
    await waitFor(() => logged('chunks embedded').length > 0, 20_000);
    expect(calls.batches.map((batch) => batch.length)).toEqual([1, 1, 1]);
    expect(calls.batches.flat().sort()).toEqual([...TEXTS].sort());
    expect(logged('chunks embedded')[0]).toMatchObject({ embedded: 3, model: embedder.id });
    expect(await missing(embedder)).toEqual([]);
    await runner.sweep('embedding_batch');
    expect(logged('chunks embedded')).toHaveLength(1); // said once, with the whole count
  });

  // Last: it makes the table again, in the shape an earlier version left it.
  it('upgrades a table of an earlier version, whose vectors the model now gives at another dimension', async () => {
    const client = (opened as OpenTestDatabase).database.db.$client;
    const { embedder, calls } = scriptedEmbedder((texts) =>
      texts.map((text) => [...vectorOf(text), 1]),
    );
    // As earlier versions made it: vectors required, an index for the model alone.
    await client.query('DROP TABLE IF EXISTS chunk_embeddings');
    await client.query(
      `CREATE TABLE chunk_embeddings (
         model text NOT NULL, content_hash text NOT NULL, embedding vector NOT NULL,
         PRIMARY KEY (model, content_hash))`,
    );
    const earlier = `chunk_embeddings_${createHash('sha256').update(`${embedder.id}/3`).digest('hex').slice(0, 16)}_hnsw`;
    await client.query(
      `CREATE INDEX ${earlier} ON chunk_embeddings
       USING hnsw ((embedding::vector(3)) vector_cosine_ops) WHERE model = '${embedder.id}'`,
    );
    await client.query(
      `INSERT INTO chunk_embeddings SELECT $1, content_hash, ('[' || ascii(content) || ',2,3]')::vector
       FROM chunks`,
      [embedder.id],
    );
    const indexes = async () =>
      (
        await client.query<{ name: string }>(
          `SELECT indexname AS name FROM pg_indexes
           WHERE tablename = 'chunk_embeddings' AND indexdef LIKE '%hnsw%'`,
        )
      ).rows.map((row) => row.name);
    const store = new VectorStore((opened as OpenTestDatabase).database.db);
    // While the model gives the dimension it had, the earlier index serves it: not built again.
    const before = await store.search(embedder.id, [98, 2, 3], [''], 1);
    expect(before[0]?.content).toBe('beta chunk text');
    expect(await indexes()).toEqual([earlier]);

    // A query has shown the model's new dimension (as a search does).
    const dimension = new EmbeddingDimension();
    dimension.observe(4);
    await runnerFor(embedder, 3, 60_000, dimension, store);
    await waitFor(() => logged('chunks embedded').length > 0, 20_000);
    expect(calls.batches).toHaveLength(1);
    expect(Object.values(await stored(embedder))).toEqual([4, 4, 4]);
    expect(
      logged('the embedding model now gives vectors of another dimension: re-embedding its chunks'),
    ).toEqual([expect.objectContaining({ model: embedder.id, from: 3, to: 4 })]);
    const hits = await store.search(embedder.id, [3, 1, 0, 1], [''], 3);
    expect(hits[0]?.content).toBe(TEXTS[2]);
    // The earlier index is gone (its cast failed every save of the new dimension).
    expect(await indexes()).not.toContain(earlier);
    expect(await indexes()).toHaveLength(1);
  });
});

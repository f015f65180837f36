import { createHash } from 'node:crypto';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/storage/database.ts';
import { engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { searchThroughChat } from '../support/search-through-chat.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * What an embeddings server may answer besides good vectors, on both engines (each with
 * pgvector), through Parley's HTTP doors:
 * - an empty vector for one text of a batch, first or in the middle: that text is found by its
 *   words, the rest of the batch by meaning, and the backfill ends (before, the text was asked
 *   for again and again, without end);
 * - the model served under the same name answering another dimension after a restart: search
 *   keeps answering, the backfill re-embeds every text at the new dimension and says so once
 *   (before, every search failed: the old vectors broke the new dimension's index);
 * - a query's vector wider than pgvector stores: the query is answered by its words.
 *
 * Each text holds one marker word, which picks its vector; texts are batched in the order of
 * their hashes, so which text is bad is chosen by that order.
 */
const paragraph = (marker: string, filler: string) =>
  `The ${marker} ${filler} keeps walking along the northern shore under grey skies.`;
const DOC1 = ['quokka', 'pelican', 'wombat'].map((marker) => paragraph(marker, 'ledger'));
const DOC2 = ['harbour', 'lantern', 'orchard'].map((marker) => paragraph(marker, 'almanac'));
const byHash = (texts: string[]) =>
  [...texts].sort((a, b) => (sha256(a) < sha256(b) ? -1 : sha256(a) > sha256(b) ? 1 : 0));
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const markerOf = (text: string) => text.split(' ')[1] as string;
const TEXTS = new Set([...DOC1, ...DOC2]);
/** The first of the first document's batch, and the middle of the second's, have no vector. */
const [EMPTY_FIRST, SECOND_1, NEAR_MARSUPIAL] = byHash(DOC1) as [string, string, string];
const [NEAR_GLACIER, EMPTY_MIDDLE, THIRD_2] = byHash(DOC2) as [string, string, string];
const VECTORS = new Map<string, number[]>([
  ['marsupial', [1, 0, 0, 0]], // a query sharing no word with its nearest text
  [NEAR_MARSUPIAL, [1, 0, 0, 0]],
  ['glacier', [0, 1, 0, 0]],
  [NEAR_GLACIER, [0, 1, 0, 0]],
  [SECOND_1, [0, 0, 1, 0]],
  [THIRD_2, [0, 0, 1, 0]],
  [EMPTY_FIRST, []],
  [EMPTY_MIDDLE, []],
]);
const RETRY_MS = 3_600_000; // no retry by the clock: a batch that failed would show

describe.each(ENGINES)('an embeddings model’s unusual answers, on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: Awaited<ReturnType<typeof engineSetup>>;
  let parley: RunningParley;
  let dataDir: string;
  /** The dimension the fake model answers now: its vectors padded with zeros to it. */
  let dimension = 4;
  const embed = (text: string) => {
    // Wider than pgvector stores: a query no vector can be compared with.
    if (text.includes('boundless')) return new Array(16_001).fill(0.01);
    const vector = VECTORS.get(text) ?? [0, 0, 0, 1];
    return vector.length === 0 ? [] : [...vector, ...new Array(dimension - 4).fill(0)];
  };
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
  /** The texts of each embeddings request that carried documents' texts (not a query's). */
  const batches = () =>
    llm.embeddingsCalls
      .map((call) => call.input)
      .filter((input) => input.every((text) => TEXTS.has(text)));
  /** The first matching line logged from `from` on. */
  const logAfter = (from: number, msg: string) =>
    parley.waitForLog((line) => line.msg === msg && parley.logs.indexOf(line) >= from, 30_000);

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

  it('stores the rest of a batch with an empty vector, first or in the middle, and ends', async () => {
    for (const [source, texts, empty, index] of [
      ['first.txt', DOC1, EMPTY_FIRST, 0],
      ['middle.txt', DOC2, EMPTY_MIDDLE, 1],
    ] as const) {
      const from = parley.logs.length;
      const answer = await ingest(parley, [file(source, texts.join('\n\n'))]);
      expect(answer).toMatchObject({ status: 200, body: { chunks: 3 } });
      await logAfter(from, 'chunks embedded');
      // One batch, this document's alone: the earlier document's empty text is not asked again.
      const batch = batches().at(-1);
      expect(batch).toEqual(byHash([...texts]));
      expect(batch?.indexOf(empty)).toBe(index);
      const warned = await logAfter(
        from,
        'the embedding model gave no usable vector for some chunks: they are found by their words only',
      );
      expect(warned).toMatchObject({ model: 'openai:fake-embed', unusable: 1, batch: 3 });
    }
    expect(batches()).toHaveLength(2);

    // The texts without a vector are found by their words; the others by meaning too.
    for (const text of [EMPTY_FIRST, EMPTY_MIDDLE, SECOND_1]) {
      const output = await search(markerOf(text));
      expect(output.retrieval).toBe('hybrid');
      expect(output.hits[0]?.text).toBe(text);
    }
    expect((await search('marsupial')).hits[0]?.text).toBe(NEAR_MARSUPIAL);
    expect((await search('glacier')).hits[0]?.text).toBe(NEAR_GLACIER);
    // A query whose vector cannot be compared is answered by its words (it was a failure).
    const wide = await search(`${markerOf(SECOND_1)} boundless`);
    expect(wide.hits[0]?.text).toBe(SECOND_1);
    await parley.settled();
    expect(batches()).toHaveLength(2); // the backfill has ended: nothing asked again
  }, 90_000);

  it('re-embeds after a restart with another dimension on its own, before any search', async () => {
    await parley.settled();
    await parley.stop();
    dimension = 5; // another model, served under the same name; nobody searches nor uploads
    parley = await startParley({ dataDir, env: env() });
    const warned = await logAfter(
      0,
      'the embedding model now gives vectors of another dimension: re-embedding its chunks',
    );
    expect(warned).toMatchObject({ model: 'openai:fake-embed', from: 4, to: 5 });
    await logAfter(0, 'chunks embedded');
    expect((await search('marsupial')).hits[0]?.text).toBe(NEAR_MARSUPIAL);
    await parley.settled();
  }, 120_000);

  it('keeps searching when the model answers another dimension, and re-embeds every text', async () => {
    await parley.settled();
    await parley.stop();
    const asked = batches().length;
    dimension = 6; // another model, served under the same name
    parley = await startParley({ dataDir, env: env() });

    // At once: found by its words (the old vectors are of another space).
    const first = await search('wombat');
    expect(first.retrieval).toBe('hybrid');
    expect(first.hits[0]?.source).toBe('first.txt');
    expect(first.hits[0]?.text).toContain('wombat');

    const warned = await logAfter(
      0,
      'the embedding model now gives vectors of another dimension: re-embedding its chunks',
    );
    expect(warned).toMatchObject({ model: 'openai:fake-embed', from: 5, to: 6, retried: 2 });
    await logAfter(0, 'chunks embedded');
    // Every text asked of the new model once: those the old one gave no vector too.
    expect(batches().slice(asked).flat().sort()).toEqual([...TEXTS].sort());
    // Found by meaning again, at the new dimension.
    expect((await search('marsupial')).hits[0]?.text).toBe(NEAR_MARSUPIAL);
    expect((await search('glacier')).hits[0]?.text).toBe(NEAR_GLACIER);
    await parley.settled();
    const output = parley.output();
    expect(output.match(/another dimension/g)).toHaveLength(1);
    for (const words of ['ledger', 'almanac', 'northern shore']) {
      expect(output).not.toContain(words);
    }

    // In the database: one row a text for the model, a vector of the new dimension, or none
    // for the texts the model gave none.
    await parley.stop();
    const database = await openDatabase(
      { ...parseConfig({}), DATA_DIR: dataDir, DATABASE_URL: setup.env.DATABASE_URL },
      pino({ level: 'silent' }),
    );
    try {
      const { rows } = await database.db.$client.query<{ content: string; dims: number[] }>(
        `SELECT c.content,
                array_agg(coalesce(vector_dims(e.embedding), 0) ORDER BY e.model) AS dims
         FROM chunks c LEFT JOIN chunk_embeddings e ON e.content_hash = c.content_hash
         GROUP BY c.content`,
      );
      const empty = new Set([EMPTY_FIRST, EMPTY_MIDDLE]);
      rows.sort((a, b) => (a.content < b.content ? -1 : 1));
      expect(rows).toEqual(
        [...DOC1, ...DOC2].sort().map((content) => ({
          content,
          dims: [empty.has(content) ? 0 : 6],
        })),
      );
    } finally {
      await database.close();
    }
  }, 120_000);
});

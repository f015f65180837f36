/**
 * Benchmark 4: latency of document search at 100,000 chunks, lexical (no embedding time),
 * through DocumentService.search as `search_documents` calls it; with `vectors`, hybrid too.
 *
 *   node bench/search-latency.ts [embedded|server] [chunks=100000] [queries=500] [caps=2000,1000,500] [vectors]

 * `caps`: postings read per query term (POSTINGS_PER_TERM; the first is Parley's default),
 * each measured on the same stored chunks.
 *
 * `vectors`: every chunk is then embedded (a 384-d hashed bag of words, in-process, so no
 * embedding time is measured) into the real vector store with its HNSW index, and measured:
 * hybrid search as users get it, the vector search alone, its recall@10 against an exact
 * scan, and the same vector search on an IVFFlat index instead (see vector-latency.ts).
 *
 * Chunks are generated from SciFact sentences shuffled into new texts (real English with its
 * real word frequencies), ~256 tokens each, stored as documents of 1,000 chunks through
 * DocumentService.ingest. Queries are SciFact's own claims.
 */
import { readFileSync } from 'node:fs';
import { embedAllChunks, fakeEmbedder, openBenchStore } from './support/document-store.ts';
import { machineReport } from './support/machine.ts';
import { seededRandom, summarize } from './support/stats.ts';
import { measureVectorSearch } from './support/vector-latency.ts';

const engine = (process.argv[2] ?? 'embedded') as 'embedded' | 'server';
const total = Number(process.argv[3] ?? 100_000);
const queryCount = Number(process.argv[4] ?? 500);
const caps = (process.argv[5] ?? '2000,1000,500').split(',').map(Number);
const withVectors = process.argv[6] === 'vectors';
const VECTOR_DIMENSION = 384;
const PER_DOCUMENT = 1_000;
const CHUNK_CHARS = 1_000; // ~250 estimated tokens: one default-sized chunk

const DATA = new URL('../../shared/data/scifact/', import.meta.url);
const read = (name: string) =>
  readFileSync(new URL(name, DATA), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { text: string });
const sentences = read('corpus.jsonl').flatMap((doc) => doc.text.split(/(?<=\.)\s+/));
const queries = read('queries-train.jsonl').map((query) => query.text);

/** A deterministic pseudo-random generator, so both engines get the same chunks. */
const random = seededRandom(42);

function chunkText(): string {
  let text = '';
  while (text.length < CHUNK_CHARS) {
    text += `${sentences[Math.floor(random() * sentences.length)]} `;
  }
  return text.trim();
}

// One chunk per paragraph at a chunk size that keeps each paragraph whole.
const chunking = { maxTokens: 400, overlapTokens: 0 };
const embedder = withVectors ? fakeEmbedder(VECTOR_DIMENSION) : undefined;
// Without the embedding job: the chunks are embedded all at once after the lexical figures.
const store = await openBenchStore(engine, chunking);
try {
  const started = performance.now();
  let stored = 0;
  for (let doc = 0; stored < total; doc++) {
    const paragraphs = Array.from({ length: Math.min(PER_DOCUMENT, total - stored) }, chunkText);
    const text = paragraphs.join('\n\n');
    const result = await store.service.ingest({
      source: `generated/${doc}.txt`,
      filename: `${doc}.txt`,
      contentType: 'text/plain',
      bytes: Buffer.byteLength(text),
      document: { kind: 'text', pages: [{ page: null, text }], ocrPages: [] },
    });
    stored += result.chunks;
    if (doc % 10 === 0) {
      process.stderr.write(
        `${stored} chunks stored, ${Math.round((performance.now() - started) / 1000)} s\n`,
      );
    }
  }
  const ingestSeconds = (performance.now() - started) / 1000;
  await store.database.db.$client.query('VACUUM ANALYZE');

  const measured: { cap: number; s: ReturnType<typeof summarize>; empty: number }[] = [];
  for (const cap of caps) {
    const service = store.withPostingsPerTerm(cap);
    // Warm-up: the first queries pay for cold caches and plans.
    for (const query of queries.slice(0, 20)) await service.search(query, { limit: 5 });
    const times: number[] = [];
    let empty = 0;
    for (let i = 0; i < queryCount; i++) {
      const query = queries[(i * 7) % queries.length] as string;
      const t = performance.now();
      const result = await service.search(query, { limit: 5 });
      times.push(performance.now() - t);
      if (result.hits.length === 0) empty++;
    }
    measured.push({ cap, s: summarize(times), empty });
    process.stderr.write(
      `cap ${cap}: p50 ${measured.at(-1)?.s.p50} p99 ${measured.at(-1)?.s.p99}\n`,
    );
  }
  const vectorReport = embedder
    ? await (async () => {
        const embedStarted = performance.now();
        await embedAllChunks(store, embedder);
        const embedSeconds = (performance.now() - embedStarted) / 1000;
        await store.database.db.$client.query('VACUUM ANALYZE chunk_embeddings');
        return [
          '',
          `Then every chunk embedded (${VECTOR_DIMENSION}-d, saved with the HNSW index in place) in ${embedSeconds.toFixed(0)} s.`,
          '',
          ...(await measureVectorSearch(store.database, embedder, chunking, queries, queryCount)),
        ];
      })()
    : [];
  const sizes = await store.database.db.$client.query<{ postings: string; bytes: string }>(
    `SELECT (SELECT count(*) FROM chunk_terms) AS postings,
            pg_total_relation_size('chunk_terms') AS bytes`,
  );
  console.log(
    [
      `## Search latency at ${stored.toLocaleString('en')} chunks, ${engine} engine`,
      '',
      '```',
      machineReport(),
      `command: node bench/search-latency.ts ${process.argv.slice(2).join(' ')}`,
      '```',
      '',
      `Stored ${stored} chunks (${sizes.rows[0]?.postings} postings, chunk_terms ${Math.round(Number(sizes.rows[0]?.bytes) / 2 ** 20)} MiB) in ${ingestSeconds.toFixed(0)} s. ${queryCount} SciFact claims as queries, top 5, lexical (BM25 in the database), one at a time, after 20 warm-up queries.`,
      '',
      '| postings read per term | p50 ms | p90 ms | p99 ms | max ms | empty results | p99 ≤ 25 ms |',
      '| --- | --- | --- | --- | --- | --- | --- |',
      ...measured.map(
        ({ cap, s, empty }) =>
          `| ${cap} | ${s.p50.toFixed(2)} | ${s.p90.toFixed(2)} | ${s.p99.toFixed(2)} | ${s.max.toFixed(2)} | ${empty} | ${s.p99 <= 25 ? 'PASS' : 'FAIL'} |`,
      ),
      ...vectorReport,
    ].join('\n'),
  );
} finally {
  await store.close();
}

/**
 * Where the embedded engine's hybrid search time goes (issue 30): on a store built by
 * `vector-buffers.ts` (its data directory, kept), BM25 alone, the vector search alone and the
 * two started together as `DocumentService.search` starts them, 300 SciFact claims each, then
 * EXPLAIN (ANALYZE, BUFFERS) of BM25's postings scan alone (the per-term index-only scans,
 * without the scoring) for three claims.
 *
 *   node --liftoff-only bench/search-split.ts <dataDir built by vector-buffers.ts> [shared_buffers=256MB]
 */
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { parseConfig } from '../src/config.ts';
import { lexicalTerms, termFrequencies } from '../src/documents/lexical-terms.ts';
import { openDatabase } from '../src/storage/database.ts';
import { DocumentRepository, SHARED } from '../src/storage/document-repository.ts';
import { VectorStore } from '../src/storage/vector-store.ts';
import { fakeEmbedder } from './support/document-store.ts';
import { load, machineReport } from './support/machine.ts';
import { summarize } from './support/stats.ts';

const [dataDir, buffersArg] = process.argv.slice(2);
if (!dataDir) throw new Error('usage: search-split.ts <dataDir> [shared_buffers]');
const BUFFERS = buffersArg ?? '256MB';
const QUERIES = 300;
const DEPTH = 50; // what hybrid search asks each side for
const DATA = new URL('../../shared/data/scifact/', import.meta.url);
const claims = readFileSync(new URL('queries-train.jsonl', DATA), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => (JSON.parse(line) as { text: string }).text);
// The same claims, in the same order, as vector-buffers.ts asks.
const asked = Array.from({ length: QUERIES }, (_, i) => claims[(i * 7) % claims.length] as string);
const embedder = fakeEmbedder(384);
const vectorsOf = (await embedder.embedDocuments(asked)) as number[][];
const termsOf = asked.map((claim) => termFrequencies(lexicalTerms(claim)));

const database = await openDatabase(
  parseConfig({ DATA_DIR: dataDir, EMBEDDED_DB_SHARED_BUFFERS: BUFFERS }),
  pino({ level: 'warn' }),
);
const documents = new DocumentRepository(database.db);
const vectors = new VectorStore(database.db);
const bm25 = (i: number) => documents.searchLexical(termsOf[i] ?? new Map(), [SHARED], DEPTH);
const nearest = (i: number) =>
  vectors.search(embedder.id, vectorsOf[i] as number[], [SHARED], DEPTH);

const timed = async (run: (i: number) => Promise<unknown>) => {
  const times: number[] = [];
  for (let i = 0; i < QUERIES; i++) {
    const started = performance.now();
    await run(i);
    times.push(performance.now() - started);
  }
  const s = summarize(times);
  return `${s.p50.toFixed(1)} | ${s.p90.toFixed(1)} | ${s.p99.toFixed(1)} | ${s.max.toFixed(1)}`;
};

try {
  for (let i = 0; i < 30; i++) await Promise.all([bm25(i), nearest(i)]);
  const rows = [
    `| BM25 alone (top ${DEPTH}) | ${await timed(bm25)} |`,
    `| vector search alone (top ${DEPTH}) | ${await timed(nearest)} |`,
    `| both, started together | ${await timed((i) => Promise.all([bm25(i), nearest(i)]))} |`,
  ];
  const plans: string[] = [];
  const client = await database.db.$client.connect();
  try {
    for (const i of [0, 1, 2]) {
      const terms = [...(termsOf[i] ?? new Map()).keys()];
      const { rows: plan } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, BUFFERS)
         SELECT p.chunk_id, p.tf, p.length FROM unnest($1::text[]) AS q(term)
         CROSS JOIN LATERAL (
           SELECT t.chunk_id, t.tf, t.length FROM chunk_terms t
           WHERE t.owner = $2 AND t.term = q.term ORDER BY t.impact DESC NULLS LAST LIMIT 500
         ) p`,
        [terms, SHARED],
      );
      plans.push(`claim ${i} (${terms.length} terms):`, ...plan.map((r) => r['QUERY PLAN']), '');
    }
  } finally {
    client.release();
  }
  console.log(
    [
      `## Embedded search split, shared_buffers ${BUFFERS}`,
      '',
      '```',
      machineReport(),
      `command: node --liftoff-only bench/search-split.ts ${process.argv.slice(2).join(' ')}`,
      '```',
      '',
      '| search | p50 ms | p90 ms | p99 ms | max ms |',
      '| --- | ---: | ---: | ---: | ---: |',
      ...rows,
      '',
      "BM25's postings scan alone, explained:",
      '',
      '```',
      ...plans,
      '```',
      '',
      `uptime at end: ${load()}`,
    ].join('\n'),
  );
} finally {
  await database.close();
}

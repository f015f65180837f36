// Throw-away prototype (not committed): packed per-term postings, scored in JS.
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { parseConfig } from '../src/config.ts';
import { lexicalTerms, termFrequencies } from '../src/documents/lexical-terms.ts';
import { openDatabase } from '../src/storage/database.ts';
import { DocumentRepository, SHARED } from '../src/storage/document-repository.ts';
import { BM25 } from '../src/storage/lexical-index.ts';
import { VectorStore } from '../src/storage/vector-store.ts';
import { fakeEmbedder } from './support/document-store.ts';
import { summarize } from './support/stats.ts';

const [dataDir, buffersArg, layout] = process.argv.slice(2);
const BUFFERS = buffersArg ?? 'auto';
const QUERIES = 300;
const DEPTH = 50;
const DATA = new URL('../../shared/data/scifact/', import.meta.url);
const claims = readFileSync(new URL('queries-train.jsonl', DATA), 'utf8').split('\n').filter(Boolean)
  .map((line) => (JSON.parse(line) as { text: string }).text);
const asked = Array.from({ length: QUERIES }, (_, i) => claims[(i * 7) % claims.length] as string);
const embedder = fakeEmbedder(384);
const vectorsOf = (await embedder.embedDocuments(asked)) as number[][];
const termsOf = asked.map((claim) => termFrequencies(lexicalTerms(claim)));
const database = await openDatabase(parseConfig({ DATA_DIR: dataDir, EMBEDDED_DB_SHARED_BUFFERS: BUFFERS }), pino({ level: 'warn' }));
const client = database.db.$client;
const documents = new DocumentRepository(database.db);
const vectors = new VectorStore(database.db);
const bytea = layout === 'bytea';
let t = performance.now();
await client.query('DROP TABLE IF EXISTS term_postings_proto');
if (bytea) {
  await client.query(`CREATE TABLE term_postings_proto (owner text, term text, postings bytea, PRIMARY KEY (owner, term))`);
} else {
  await client.query(`CREATE TABLE term_postings_proto (owner text, term text, chunk_ids bigint[], tfs int[], lengths int[], PRIMARY KEY (owner, term))`);
}
const { rows: built } = await client.query<{ n: string }>(`SELECT count(*) n FROM chunk_terms`);
console.log('postings', built[0]?.n);
if (!bytea) {
  await client.query(`INSERT INTO term_postings_proto
    SELECT owner, term, array_agg(chunk_id ORDER BY impact DESC, chunk_id), array_agg(tf ORDER BY impact DESC, chunk_id), array_agg(length ORDER BY impact DESC, chunk_id)
    FROM (SELECT t.*, row_number() OVER (PARTITION BY owner, term ORDER BY impact DESC NULLS LAST, chunk_id) rn FROM chunk_terms t) x WHERE rn <= 500 GROUP BY owner, term`);
} else {
  // int8 chunk id, int4 tf, int4 length: 16 bytes a posting, big-endian
  await client.query(`INSERT INTO term_postings_proto
    SELECT owner, term, string_agg(int8send(chunk_id) || int4send(tf) || int4send(length), ''::bytea ORDER BY impact DESC, chunk_id)
    FROM (SELECT t.*, row_number() OVER (PARTITION BY owner, term ORDER BY impact DESC NULLS LAST, chunk_id) rn FROM chunk_terms t) x WHERE rn <= 500 GROUP BY owner, term`);
}
console.log('build ms', (performance.now() - t).toFixed(0));

async function packed(terms: ReadonlyMap<string, number>, owners: string[], limit: number) {
  const { rows } = await client.query<any>(
    `SELECT p.term, ${bytea ? 'p.postings' : 'p.chunk_ids, p.tfs, p.lengths'}, (SELECT sum(df) FROM term_stats s WHERE s.owner = ANY($2) AND s.term = p.term)::float8 AS df,
       (SELECT sum(chunks)::float8 FROM corpus_stats WHERE owner = ANY($2)) AS n,
       (SELECT sum(terms)::float8 / greatest(sum(chunks), 1) FROM corpus_stats WHERE owner = ANY($2)) AS avgdl
     FROM term_postings_proto p WHERE p.owner = ANY($2) AND p.term = ANY($1)`,
    [[...terms.keys()], owners],
  );
  const scores = new Map<number, number>();
  const { k1, b } = BM25;
  for (const row of rows) {
    const w = (terms.get(row.term) ?? 0) * Math.log(1 + (row.n - row.df + 0.5) / (row.df + 0.5)) * (k1 + 1);
    const norm = (len: number) => k1 * (1 - b + (b * len) / row.avgdl);
    if (bytea) {
      const buf: Uint8Array = row.postings;
      const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
      for (let o = 0; o < buf.byteLength; o += 16) {
        const id = Number(view.getBigInt64(o));
        const tf = view.getInt32(o + 8);
        const len = view.getInt32(o + 12);
        scores.set(id, (scores.get(id) ?? 0) + (w * tf) / (tf + norm(len)));
      }
    } else {
      const ids = row.chunk_ids, tfs = row.tfs, lens = row.lengths;
      for (let i = 0; i < ids.length; i++) {
        const id = Number(ids[i]);
        scores.set(id, (scores.get(id) ?? 0) + (w * tfs[i]) / (tfs[i] + norm(lens[i])));
      }
    }
  }
  const top = [...scores].sort((x, y) => y[1] - x[1] || x[0] - y[0]).slice(0, limit);
  const { rows: hits } = await client.query(
    `SELECT c.id, d.source, c.chunk_index, c.page, c.content, c.metadata FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id = ANY($1::bigint[])`,
    [top.map((x) => x[0])],
  );
  return top.map(([id, score]) => ({ id, score, hit: hits.find((h: any) => Number(h.id) === id) }));
}
const bm25 = (i: number) => documents.searchLexical(termsOf[i] ?? new Map(), [SHARED], DEPTH);
const proto = (i: number) => packed(termsOf[i] ?? new Map(), [SHARED], DEPTH);
const nearest = (i: number) => vectors.search(embedder.id, vectorsOf[i] as number[], [SHARED], DEPTH);
// sanity: same ids
let same = 0;
for (let i = 0; i < 50; i++) {
  const a = (await bm25(i)).map((h) => h.chunkId);
  const p = (await proto(i)).map((h) => h.id);
  if (JSON.stringify(a) === JSON.stringify(p)) same++;
  else if (i < 3) console.log('diff', i, a.slice(0, 8), p.slice(0, 8));
}
console.log('identical top-50 lists', same, '/ 50');
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
for (let r = 0; r < 2; r++) {
  console.log('bm25 now   ', await timed(bm25));
  console.log('bm25 packed', await timed(proto));
  console.log('vector     ', await timed(nearest));
  console.log('now+vector ', await timed(async (i) => { await bm25(i); await nearest(i); }));
  console.log('pack+vector', await timed(async (i) => { await proto(i); await nearest(i); }));
}
await database.close();

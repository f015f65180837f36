import type pg from 'pg';
import { type ChunkHit, type HitRow, toHit } from './chunk-hit.ts';
import type { Db } from './database.ts';
import type { NewChunk } from './document-repository.ts';
import { HIDDEN } from './hidden-documents.ts';

/**
 * The lexical index: BM25 computed in the database, on both engines, with no extension.
 * `chunk_terms` holds one posting per (chunk, term) with its tf and the chunk's length;
 * `term_stats` the document frequency of each term and `corpus_stats` the number and total
 * length of chunks, per owner, kept in step inside the transaction that writes the chunks.
 */

/** BM25 parameters, chosen on SciFact (bench/retrieval-quality.ts, bench/RESULTS.md). */
export const BM25 = { k1: 0.9, b: 0.4 } as const;

/**
 * Postings read per query term, strongest first. Exact for any term in fewer chunks than
 * this; for a term in more (a near stop-word), its weakest postings, which can hardly lift a
 * chunk into the top results, are skipped. This is what keeps a search fast at 100,000
 * chunks. Measured (bench/RESULTS.md): SciFact nDCG@10 0.692 / 0.693 / 0.690 at 2,000 /
 * 1,000 / 500; p50 at 100,000 chunks on the server engine 35 / 20 / 15 ms (loaded machine).
 */
export const POSTINGS_PER_TERM = 500;

/**
 * BM25 over the chunks the owners may see, best first. Per query term, its strongest
 * postings (see POSTINGS_PER_TERM); idf from `term_stats`, N and the average length from
 * `corpus_stats`, so no statement scans the corpus. A term's weight (its count in the query,
 * idf and k1 + 1) is computed once (`w` is MATERIALIZED): inlined, PostgreSQL computed it,
 * logarithm included, for every posting, which on PGlite was a fifth to a third of the
 * search (bench/RESULTS.md, issue 30). A hidden document's postings (a large version being
 * written) are skipped before a term's postings and the candidates are cut: left out after,
 * they took the places of visible chunks, and a search during the write returned fewer than
 * `limit` hits, none when the new version ranked best. The hidden chunks are gathered once
 * (`hidden`, empty but while such a write runs), and a posting is probed against them only
 * when there are any: a lookup of each posting's chunk and document made the search five times
 * slower, and a probe of an empty set ~15 % (bench/RESULTS.md, 2026-11-28).
 */
export async function searchBm25(
  db: Db,
  terms: ReadonlyMap<string, number>,
  owners: readonly string[],
  limit: number,
  postingsPerTerm = POSTINGS_PER_TERM,
): Promise<ChunkHit[]> {
  if (terms.size === 0) return [];
  const { rows } = await db.$client.query<HitRow>(
    `WITH q AS (
       SELECT term, qtf FROM unnest($1::text[], $2::int[]) AS q(term, qtf)
     ), st AS (
       SELECT coalesce(sum(chunks), 0)::float8 AS n,
              coalesce(sum(terms), 0)::float8 / greatest(coalesce(sum(chunks), 0), 1) AS avgdl
       FROM corpus_stats WHERE owner = ANY($3::text[])
     ), w AS MATERIALIZED (
       SELECT q.term, q.qtf * ln(1 + (st.n - d.df + 0.5) / (d.df + 0.5)) * ($6::float8 + 1) AS weight
       FROM q CROSS JOIN st
       CROSS JOIN LATERAL (
         SELECT sum(s.df)::float8 AS df FROM term_stats s
         WHERE s.owner = ANY($3::text[]) AND s.term = q.term
       ) d
       WHERE d.df > 0
     ), hidden AS MATERIALIZED (
       SELECT hc.id FROM documents hd JOIN chunks hc ON hc.document_id = hd.id
       WHERE hd.kind = '${HIDDEN}' AND hd.owner = ANY($3::text[])
     ), hits AS (
       SELECT p.chunk_id,
              sum(w.weight * p.tf
                  / (p.tf + $6::float8 * (1 - $7::float8 + $7::float8 * p.length / st.avgdl))) AS score
       FROM w CROSS JOIN st CROSS JOIN unnest($3::text[]) AS o(owner)
       CROSS JOIN LATERAL (
         SELECT t.chunk_id, t.tf, t.length FROM chunk_terms t
         WHERE t.owner = o.owner AND t.term = w.term
           AND (NOT EXISTS (SELECT FROM hidden) OR t.chunk_id NOT IN (SELECT id FROM hidden))
         ORDER BY t.impact DESC NULLS LAST
         LIMIT $4
       ) p
       GROUP BY p.chunk_id
       ORDER BY score DESC, p.chunk_id
       LIMIT $5
     )
     SELECT c.id, d.source, c.chunk_index, c.page, c.content, c.metadata, hits.score
     FROM hits
     JOIN chunks c ON c.id = hits.chunk_id
     JOIN documents d ON d.id = c.document_id AND d.kind <> '${HIDDEN}'
     ORDER BY hits.score DESC, c.id`,
    [[...terms.keys()], [...terms.values()], owners, postingsPerTerm, limit, BM25.k1, BM25.b],
  );
  return rows.map(toHit);
}

/**
 * The average chunk length the owner's corpus will have once these chunks are in: what their
 * postings' impact is computed with.
 */
export async function averageLengthWith(
  client: pg.PoolClient,
  owner: string,
  chunks: readonly NewChunk[],
): Promise<number> {
  const stats = await client.query<{ chunks: string; terms: string }>(
    'SELECT chunks, terms FROM corpus_stats WHERE owner = $1',
    [owner],
  );
  const before = stats.rows[0];
  const totalChunks = Number(before?.chunks ?? 0) + chunks.length;
  return (Number(before?.terms ?? 0) + termsIn(chunks)) / Math.max(totalChunks, 1);
}

/**
 * Adds the postings of freshly inserted chunks. They count in BM25's statistics only once
 * countIntoStatistics has run (in the transaction that makes their document visible).
 */
export async function writePostings(
  client: pg.PoolClient,
  owner: string,
  chunks: readonly NewChunk[],
  chunkId: (index: number) => number,
  avgdl: number,
): Promise<void> {
  const chunkIds: number[] = [];
  const terms: string[] = [];
  const tfs: number[] = [];
  const lengths: number[] = [];
  const impacts: number[] = [];
  chunks.forEach((chunk, index) => {
    for (const [term, tf] of chunk.terms) {
      chunkIds.push(chunkId(index));
      terms.push(term);
      tfs.push(tf);
      lengths.push(chunk.termCount);
      impacts.push(impact(tf, chunk.termCount, avgdl));
    }
  });
  await client.query(
    `INSERT INTO chunk_terms (owner, chunk_id, term, tf, length, impact)
     SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::int[], $5::int[], $6::real[])`,
    [owner, chunkIds, terms, tfs, lengths, impacts],
  );
}

/** Counts a document's chunks into the document frequencies and the corpus size and length. */
export async function countIntoStatistics(
  client: pg.PoolClient,
  owner: string,
  chunks: readonly NewChunk[],
): Promise<void> {
  const df = new Map<string, number>();
  for (const chunk of chunks) {
    for (const term of chunk.terms.keys()) df.set(term, (df.get(term) ?? 0) + 1);
  }
  await client.query(
    `INSERT INTO term_stats (owner, term, df) SELECT $1, * FROM unnest($2::text[], $3::int[])
     ON CONFLICT (owner, term) DO UPDATE SET df = term_stats.df + excluded.df`,
    [owner, [...df.keys()], [...df.values()]],
  );
  await client.query(
    `INSERT INTO corpus_stats (owner, chunks, terms) VALUES ($1, $2, $3)
     ON CONFLICT (owner) DO UPDATE
     SET chunks = corpus_stats.chunks + excluded.chunks, terms = corpus_stats.terms + excluded.terms`,
    [owner, chunks.length, termsIn(chunks)],
  );
}

const termsIn = (chunks: readonly NewChunk[]) =>
  chunks.reduce((sum, chunk) => sum + chunk.termCount, 0);

/** Takes a document's postings out of the index and its statistics (before it is deleted). */
export async function removePostings(
  client: pg.PoolClient,
  owner: string,
  documentId: string,
): Promise<void> {
  await subtractFromStatistics(client, owner, documentId);
  await client.query(
    'DELETE FROM chunk_terms WHERE chunk_id IN (SELECT id FROM chunks WHERE document_id = $1)',
    [documentId],
  );
}

/**
 * Takes a document out of the statistics, leaving its postings (hidden documents' postings are
 * deleted later, a batch at a time).
 */
export async function subtractFromStatistics(
  client: pg.PoolClient,
  owner: string,
  documentId: string,
): Promise<void> {
  await client.query(
    `UPDATE term_stats s SET df = s.df - x.n
     FROM (SELECT t.term, count(*)::int AS n
           FROM chunk_terms t JOIN chunks c ON c.id = t.chunk_id
           WHERE c.document_id = $1 GROUP BY t.term) x
     WHERE s.owner = $2 AND s.term = x.term`,
    [documentId, owner],
  );
  await client.query(
    `UPDATE corpus_stats s SET chunks = s.chunks - x.n, terms = s.terms - x.total
     FROM (SELECT count(*) AS n, coalesce(sum(term_count), 0) AS total
           FROM chunks WHERE document_id = $1) x
     WHERE s.owner = $2`,
    [documentId, owner],
  );
}

/** BM25's term weight without idf: the order postings are read in. */
function impact(tf: number, length: number, avgdl: number): number {
  const { k1, b } = BM25;
  return (tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * length) / Math.max(avgdl, 1)));
}

/** A chunk found by a search, with where it came from. */
export interface ChunkHit {
  chunkId: number;
  source: string;
  chunkIndex: number;
  page: number | null;
  content: string;
  metadata: Record<string, unknown>;
  score: number;
}

/** The row both searches (lexical and vector) select. */
export interface HitRow {
  id: string;
  source: string;
  chunk_index: number;
  page: number | null;
  content: string;
  metadata: Record<string, unknown>;
  score: number;
}

export const toHit = (row: HitRow): ChunkHit => ({
  chunkId: Number(row.id),
  source: row.source,
  chunkIndex: row.chunk_index,
  page: row.page,
  content: row.content,
  metadata: row.metadata,
  score: Number(row.score),
});

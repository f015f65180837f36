import type { ChunkHit } from '../storage/chunk-hit.ts';

/** One ranking to fuse, best first, with the lowest score its scoring function can give. */
export interface ScoredList {
  hits: readonly ChunkHit[];
  /** The list's share of the fused score (the shares of all lists add up to 1). */
  weight: number;
  /** The scoring function's theoretical minimum: 0 for BM25, −1 for cosine similarity. */
  floor: number;
  /**
   * True when the list holds every chunk the function scores above its floor: BM25 found
   * fewer chunks than it was asked for, so a chunk it did not return did not match at all.
   * False when the list was cut at its depth (or, for vectors, always: every chunk has a
   * similarity, and an approximate index may return fewer rows than asked).
   */
  complete: boolean;
}

/**
 * Fuses ranked lists by a convex combination of their scores, each normalised between its
 * scoring function's theoretical minimum and the list's best score (Bruch, Gai and Ingber,
 * "An Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS 2023: "TM2C2", which they
 * found better than reciprocal rank fusion in and out of domain, and robust to its one
 * parameter).
 *
 * Why scores and not ranks: ranks throw away how sure a ranking is. When BM25's best chunk
 * scores far above the rest and the vectors see little difference between their candidates,
 * the fused order should follow BM25, and the other way round; reciprocal rank fusion gives
 * both lists the same spread whatever they scored, so a weak ranking reorders a confident
 * one (bench/RESULTS.md: with the fake embedder, RRF at any weight lowered SciFact nDCG@10).
 *
 * A chunk missing from a list that was cut at its depth may rank just below it, so it is
 * given the list's lowest normalised score (an upper bound) rather than nothing: a chunk that
 * one search ranks first is not sunk by being 51st in the other. A chunk missing from a
 * complete list scores the floor: crediting it with the lowest match would give every
 * vector-only candidate full lexical credit when BM25 found a single chunk, the one with the
 * exact name or code the user typed.
 *
 * A score that is not a finite number (cosine with a zero vector is NaN) is the floor, so
 * every fused score is finite and the order is total. Ties go to the lower chunk id.
 */
export function fuseByScore(lists: readonly ScoredList[], limit: number): ChunkHit[] {
  const used = lists.filter((list) => list.weight > 0 && list.hits.length > 0);
  const fused = new Map<number, { hit: ChunkHit; parts: number[] }>();
  const absent: number[] = [];
  used.forEach((list, index) => {
    const scoreOf = (hit: ChunkHit) => (Number.isFinite(hit.score) ? hit.score : list.floor);
    const best = Math.max(...list.hits.map(scoreOf));
    const span = best - list.floor;
    // All at the floor (degenerate vectors): the list says nothing, so it adds nothing.
    const normalise = (score: number) => (span > 0 ? (score - list.floor) / span : 0);
    absent[index] = list.complete
      ? 0
      : Math.min(...list.hits.map((hit) => normalise(scoreOf(hit))));
    for (const hit of list.hits) {
      const entry = fused.get(hit.chunkId) ?? { hit, parts: [] };
      entry.parts[index] = normalise(scoreOf(hit));
      fused.set(hit.chunkId, entry);
    }
  });
  return [...fused.values()]
    .map(({ hit, parts }) => ({
      ...hit,
      score: used.reduce(
        (sum, list, index) => sum + list.weight * (parts[index] ?? (absent[index] as number)),
        0,
      ),
    }))
    .sort((a, b) => b.score - a.score || a.chunkId - b.chunkId)
    .slice(0, limit);
}

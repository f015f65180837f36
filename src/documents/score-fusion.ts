import type { ChunkHit } from '../storage/chunk-hit.ts';

/** One ranking to fuse, best first, with the lowest score its scoring function can give. */
export interface ScoredList {
  hits: readonly ChunkHit[];
  /** The list's share of the fused score (the shares of all lists add up to 1). */
  weight: number;
  /** The scoring function's theoretical minimum: 0 for BM25, −1 for cosine similarity. */
  floor: number;
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
 * A chunk missing from a list ranked below that list's depth, so it is given the list's
 * lowest normalised score (an upper bound) rather than nothing: a chunk that one search
 * ranks first is not sunk by being 51st in the other. Ties go to the lower chunk id.
 */
export function fuseByScore(lists: readonly ScoredList[], limit: number): ChunkHit[] {
  const used = lists.filter((list) => list.weight > 0 && list.hits.length > 0);
  const fused = new Map<number, { hit: ChunkHit; parts: number[] }>();
  const lowest: number[] = [];
  used.forEach((list, index) => {
    const best = list.hits[0]?.score ?? list.floor;
    const span = best - list.floor;
    const normalise = (score: number) => (span > 0 ? (score - list.floor) / span : 1);
    lowest[index] = normalise(list.hits.at(-1)?.score ?? list.floor);
    for (const hit of list.hits) {
      const entry = fused.get(hit.chunkId) ?? { hit, parts: [] };
      entry.parts[index] = normalise(hit.score);
      fused.set(hit.chunkId, entry);
    }
  });
  return [...fused.values()]
    .map(({ hit, parts }) => ({
      ...hit,
      score: used.reduce(
        (sum, list, index) => sum + list.weight * (parts[index] ?? (lowest[index] as number)),
        0,
      ),
    }))
    .sort((a, b) => b.score - a.score || a.chunkId - b.chunkId)
    .slice(0, limit);
}

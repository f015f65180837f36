import type { ChunkHit } from '../storage/chunk-hit.ts';

/** Reciprocal rank fusion's constant (Cormack et al. 2009): damps the top ranks' lead. */
const K = 60;

/**
 * Fuses ranked lists by reciprocal rank: a chunk scores the sum of 1 / (K + rank) over the
 * lists it is in. Ranks, not scores, are combined, so BM25's unbounded scores and cosine
 * similarities need no calibration against each other.
 */
export function fuseByRank(lists: readonly (readonly ChunkHit[])[], limit: number): ChunkHit[] {
  const fused = new Map<number, ChunkHit>();
  for (const list of lists) {
    list.forEach((hit, rank) => {
      const seen = fused.get(hit.chunkId);
      const score = 1 / (K + rank + 1);
      fused.set(hit.chunkId, { ...(seen ?? hit), score: (seen?.score ?? 0) + score });
    });
  }
  return [...fused.values()]
    .sort((a, b) => b.score - a.score || a.chunkId - b.chunkId)
    .slice(0, limit);
}

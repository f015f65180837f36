import type { ChunkHit } from '../storage/chunk-hit.ts';

/** Reciprocal rank fusion's constant (Cormack et al. 2009): damps the top ranks' lead. */
const K = 60;

/** One ranking to fuse, best first, and how much say it has (1 = RRF's usual equal say). */
export interface RankedList {
  hits: readonly ChunkHit[];
  weight: number;
}

/**
 * Fuses ranked lists by weighted reciprocal rank: a chunk scores the sum of
 * weight / (K + rank) over the lists it is in. Ranks, not scores, are combined, so BM25's
 * unbounded scores and cosine similarities need no calibration against each other; the
 * weights say how far each ranking is trusted (see HYBRID_VECTOR_WEIGHT). A list of weight 0
 * changes nothing: the result is the other lists' order. Ties go to the lower chunk id.
 */
export function fuseByRank(lists: readonly RankedList[], limit: number): ChunkHit[] {
  const fused = new Map<number, ChunkHit>();
  for (const { hits, weight } of lists) {
    if (!(weight > 0)) continue;
    hits.forEach((hit, rank) => {
      const seen = fused.get(hit.chunkId);
      const score = weight / (K + rank + 1);
      fused.set(hit.chunkId, { ...(seen ?? hit), score: (seen?.score ?? 0) + score });
    });
  }
  return [...fused.values()]
    .sort((a, b) => b.score - a.score || a.chunkId - b.chunkId)
    .slice(0, limit);
}

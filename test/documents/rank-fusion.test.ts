import { describe, expect, it } from 'vitest';
import { fuseByRank } from '../../src/documents/rank-fusion.ts';
import type { ChunkHit } from '../../src/storage/chunk-hit.ts';

/** Hits with these chunk ids, best first (scores as a ranking would give them). */
const ranked = (...ids: number[]): ChunkHit[] =>
  ids.map((id, rank) => ({
    chunkId: id,
    source: `doc-${id}`,
    chunkIndex: 0,
    page: null,
    content: `chunk ${id}`,
    metadata: {},
    score: 100 - rank,
  }));

const ids = (hits: ChunkHit[]) => hits.map((hit) => hit.chunkId);

describe('fuseByRank', () => {
  it('at equal weights, ranks a chunk both lists found above chunks only one found', () => {
    const fused = fuseByRank(
      [
        { hits: ranked(1, 2, 3), weight: 1 },
        { hits: ranked(4, 3, 5), weight: 1 },
      ],
      10,
    );
    // 3: 1/63 + 1/62; 1 and 4: 1/61 each (tie → lower id); 2: 1/62; 5: 1/63.
    expect(ids(fused)).toEqual([3, 1, 4, 2, 5]);
    expect(fused[0]?.score).toBeCloseTo(1 / 63 + 1 / 62, 12);
  });

  it('with a weight-0 vector list, returns the lexical order unchanged', () => {
    const fused = fuseByRank(
      [
        { hits: ranked(7, 8, 9), weight: 1 },
        { hits: ranked(9, 10, 8), weight: 0 },
      ],
      10,
    );
    expect(ids(fused)).toEqual([7, 8, 9]);
  });

  it('with a small vector weight, only reorders what BM25 ranks close together', () => {
    const lexical = ranked(...Array.from({ length: 50 }, (_, i) => i + 1));
    const fused = fuseByRank(
      [
        { hits: lexical, weight: 1 },
        // The vectors' favourites: lexical ranks 50 and 3, and a chunk BM25 did not find.
        { hits: ranked(50, 3, 99), weight: 0.3 },
      ],
      10,
    );
    // Lexical rank 3 gains 0.3/62 and passes ranks 1 and 2 (1/61 − 1/63 < 0.3/62).
    expect(ids(fused).slice(0, 4)).toEqual([3, 1, 2, 4]);
    // Rank 50 and the vector-only chunk stay out of the top ten.
    expect(ids(fused)).not.toContain(50);
    expect(ids(fused)).not.toContain(99);
    expect(fused).toHaveLength(10);
  });

  it('at full weight, a strong vector-only hit enters the results', () => {
    const lexical = ranked(...Array.from({ length: 50 }, (_, i) => i + 1));
    const fused = fuseByRank(
      [
        { hits: lexical, weight: 1 },
        { hits: ranked(99), weight: 1 },
      ],
      5,
    );
    expect(ids(fused)).toEqual([1, 99, 2, 3, 4]);
  });

  it('keeps the first list’s copy of a chunk, replacing only its score, and honours the limit', () => {
    const fused = fuseByRank(
      [
        { hits: ranked(1, 2), weight: 1 },
        { hits: ranked(2, 1).map((hit) => ({ ...hit, content: 'other copy' })), weight: 0.5 },
      ],
      1,
    );
    expect(fused).toEqual([
      {
        chunkId: 1,
        source: 'doc-1',
        chunkIndex: 0,
        page: null,
        content: 'chunk 1',
        metadata: {},
        score: 1 / 61 + 0.5 / 62,
      },
    ]);
  });

  it('returns nothing for nothing', () => {
    expect(fuseByRank([], 5)).toEqual([]);
    expect(fuseByRank([{ hits: [], weight: 1 }], 5)).toEqual([]);
  });
});

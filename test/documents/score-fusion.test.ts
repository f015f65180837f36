import { describe, expect, it } from 'vitest';
import { fuseByScore } from '../../src/documents/score-fusion.ts';
import type { ChunkHit } from '../../src/storage/chunk-hit.ts';

/** Hits with these chunk ids and scores, best first. */
const scored = (...pairs: [id: number, score: number][]): ChunkHit[] =>
  pairs.map(([id, score]) => ({
    chunkId: id,
    source: `doc-${id}`,
    chunkIndex: 0,
    page: null,
    content: `chunk ${id}`,
    metadata: {},
    score,
  }));

const ids = (hits: ChunkHit[]) => hits.map((hit) => hit.chunkId);
/** A BM25 list cut at its depth (`complete`: it held every matching chunk). */
const bm25 = (hits: ChunkHit[], weight: number, complete = false) => ({
  hits,
  weight,
  floor: 0,
  complete,
});
const cosine = (hits: ChunkHit[], weight: number) => ({ hits, weight, floor: -1, complete: false });

describe('fuseByScore', () => {
  it('follows a confident BM25 ranking when the vectors barely tell their candidates apart', () => {
    const fused = fuseByScore(
      [
        bm25(scored([1, 12], [2, 3], [3, 2.5]), 0.5),
        // Reversed, but 0.80 against 0.78: the vectors are not sure.
        cosine(scored([3, 0.8], [2, 0.79], [1, 0.78]), 0.5),
      ],
      10,
    );
    expect(ids(fused)).toEqual([1, 2, 3]);
  });

  it('lets a confident vector ranking reorder BM25 candidates that score alike', () => {
    const fused = fuseByScore(
      [
        bm25(scored([1, 5], [2, 4.9], [3, 4.8]), 0.5),
        cosine(scored([3, 0.9], [2, 0.1], [1, -0.2]), 0.5),
      ],
      10,
    );
    expect(ids(fused)[0]).toBe(3);
  });

  it('normalises each list between its floor and its best, and adds the weighted shares', () => {
    const fused = fuseByScore(
      [bm25(scored([1, 10], [2, 5]), 0.7), cosine(scored([2, 0.5], [1, 0]), 0.3)],
      10,
    );
    // 1: 0.7 × 10/10 + 0.3 × (0+1)/(0.5+1); 2: 0.7 × 5/10 + 0.3 × 1.
    expect(fused.map((hit) => [hit.chunkId, hit.score])).toEqual([
      [1, expect.closeTo(0.7 + 0.3 * (1 / 1.5), 12)],
      [2, expect.closeTo(0.35 + 0.3, 12)],
    ]);
  });

  it("gives a chunk missing from a cut list that list's lowest score, not nothing", () => {
    const fused = fuseByScore(
      [
        bm25(scored([1, 10], [2, 9], [3, 8]), 0.5),
        // The vectors' best is a chunk BM25 did not find; BM25's best is not among theirs.
        cosine(scored([9, 0.9], [2, 0.5], [3, 0.4]), 0.5),
      ],
      10,
    );
    const score = (id: number) => fused.find((hit) => hit.chunkId === id)?.score;
    expect(score(1)).toBeCloseTo(0.5 * 1 + 0.5 * (1.4 / 1.9), 12);
    expect(score(9)).toBeCloseTo(0.5 * 0.8 + 0.5 * 1, 12);
    expect(ids(fused)).toEqual([9, 1, 2, 3]);
  });

  it('gives a chunk missing from a complete list the floor: one lexical match ranks first', () => {
    const lists = (complete: boolean) => [
      bm25(scored([2, 7.5]), 0.5, complete), // the one chunk with the query's rare term
      cosine(scored([1, 0.9], [3, 0.85], [2, 0.6]), 0.5), // nearer vectors without it
    ];
    const fused = fuseByScore(lists(true), 10);
    expect(ids(fused)).toEqual([2, 1, 3]);
    expect(fused[0]?.score).toBeCloseTo(0.5 + 0.5 * (1.6 / 1.9), 12);
    expect(fused[1]?.score).toBeCloseTo(0.5 * 1, 12);
    // Cut at its depth, the same list credits the others with its lowest score, 1.
    expect(ids(fuseByScore(lists(false), 10))).toEqual([1, 3, 2]);
  });

  it('scores a NaN or infinite score at the floor, and an all-floor list as nothing', () => {
    const fused = fuseByScore(
      [
        bm25(scored([1, 3], [2, 2]), 0.5, true),
        cosine(scored([3, 0.5], [2, Number.NaN], [1, Number.POSITIVE_INFINITY]), 0.5),
      ],
      10,
    );
    expect(fused.map((hit) => [hit.chunkId, hit.score])).toEqual([
      [1, expect.closeTo(0.5, 12)],
      [3, expect.closeTo(0.5, 12)],
      [2, expect.closeTo(0.5 * (2 / 3), 12)],
    ]);
    const degenerate = fuseByScore(
      [bm25(scored([5, 2]), 0.5, true), cosine(scored([6, Number.NaN], [5, Number.NaN]), 0.5)],
      10,
    );
    expect(degenerate.map((hit) => [hit.chunkId, hit.score])).toEqual([
      [5, 0.5],
      [6, 0],
    ]);
  });

  it('with a weight-0 list, returns the other order unchanged', () => {
    const fused = fuseByScore(
      [bm25(scored([7, 3], [8, 2], [9, 1]), 1), cosine(scored([9, 1], [10, 0.9]), 0)],
      10,
    );
    expect(ids(fused)).toEqual([7, 8, 9]);
  });

  it('keeps the first list’s copy of a chunk, breaks ties by chunk id, honours the limit', () => {
    const fused = fuseByScore(
      [
        bm25(scored([2, 1], [1, 1]), 0.5),
        cosine(
          scored([1, 1], [2, 1]).map((hit) => ({ ...hit, content: 'other copy' })),
          0.5,
        ),
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
        score: 1,
      },
    ]);
  });

  it('returns nothing for nothing, and scores a one-hit list as its best', () => {
    expect(fuseByScore([], 5)).toEqual([]);
    expect(fuseByScore([bm25([], 1)], 5)).toEqual([]);
    expect(fuseByScore([bm25(scored([4, 2.5]), 1)], 5).map((hit) => hit.score)).toEqual([1]);
    // At the function's floor, the best is still nothing.
    expect(fuseByScore([cosine(scored([4, -1]), 1)], 5).map((hit) => hit.score)).toEqual([0]);
  });
});

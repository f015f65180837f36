/**
 * A seeded generator of numbers in [0, 1) (mulberry32), so a "random" case list is the same on
 * every run and a failure can be replayed. Not the C library's LCG written with doubles,
 * `(seed * 1103515245 + 12345) % 2 ** 31`: the product passes 2 ** 53 and loses its low bits,
 * and the sequence cycles after 11,000–15,000 draws (from seeds 7, 11, 22 and 31), so 40,000
 * "random" lines were ~1,500 different ones.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

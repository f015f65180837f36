/** The widest `vector` pgvector stores. */
const MAX_DIMENSION = 16_000;

/**
 * Whether a vector from an embedding model can be stored and compared by cosine: 1 to 16,000
 * numbers, all finite (pgvector refuses NaN and infinities), not all zero (a zero vector has
 * no direction: its cosine with anything is NaN). Models do return such vectors for some
 * inputs (an empty array, zeros for text they cannot read), and servers can send numbers
 * JSON parses as infinities.
 */
export const isUsableVector = (vector: unknown): vector is number[] =>
  Array.isArray(vector) &&
  vector.length >= 1 &&
  vector.length <= MAX_DIMENSION &&
  vector.every((x) => typeof x === 'number' && Number.isFinite(x)) &&
  vector.some((x) => x !== 0);

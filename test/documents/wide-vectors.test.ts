import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { VECTOR_SETUPS } from '../support/engines.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { searchThroughChat } from '../support/search-through-chat.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * Embedding models wider than pgvector's HNSW index takes for `vector` (2,000 dimensions):
 * OpenAI's text-embedding-3-large (3,072), Qwen3-Embedding-8B (4,096). Their vectors are stored
 * and searched like any others.
 */
const SETUPS = VECTOR_SETUPS.filter((setup) => setup.pgvector).flatMap((setup) =>
  [3072, 4096].map((dimension) => ({ ...setup, dimension })),
);

describe.each(SETUPS)('$dimension-dimension vectors on $name', ({ engine, dimension }) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;

  beforeAll(async () => {
    setup = await engineSetup(engine, {}, { embeddingDimension: dimension });
    llm = setup.llm;
    parley = await startParley({
      dataDir: setup.dataDir,
      env: {
        ...setup.env,
        EMBEDDINGS_PROVIDER: 'openai',
        EMBEDDINGS_BASE_URL: llm.url,
        EMBEDDINGS_MODEL: 'fake-embed',
        EMBEDDINGS_MAX_RETRIES: '0',
      },
    });
  }, 120_000);
  afterEach(() => {
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('embeds the documents and searches them by vectors as well as by words', async () => {
    for (const [name, text] of [
      ['animals.txt', 'The quokka is a small marsupial found on Rottnest Island.'],
      ['cities.txt', 'Busan is a port city in the south of Korea.'],
    ]) {
      expect((await ingest(parley, [file(name as string, text as string)])).status).toBe(200);
    }
    await parley.waitForLog((line) => line.msg === 'chunks embedded', 30_000);
    const output = await searchThroughChat(parley, llm, 'marsupial island');
    expect(output.retrieval).toBe('hybrid');
    expect(output.hits.map((hit) => hit.source)[0]).toBe('animals.txt');
  });
});

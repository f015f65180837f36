import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import { longestHealthWait } from '../support/health-during.ts';
import { file, ingest, listedSources } from '../support/ingest-client.ts';
import { searchThroughChat } from '../support/search-through-chat.ts';
import { seededRandom } from '../support/seeded-random.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * A "word" thousands of letters long, as a gene sequence, a hash dump or a PDF page whose
 * spaces were lost gives: with chunks large enough to hold it whole, it must not keep the
 * document out of the index (a term is a key of the lexical index's B-tree, which holds at
 * most 2,704 bytes a row).
 */
function letters(count: number): string {
  const random = seededRandom(7);
  let text = '';
  for (let i = 0; i < count; i++) text += String.fromCharCode(97 + Math.floor(random() * 26));
  return text;
}

describe.each(ENGINES)('a document with a very long word on the %s engine', (engine) => {
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  let parley: RunningParley;

  beforeAll(async () => {
    setup = await engineSetup(engine, { EMBEDDINGS_PROVIDER: 'none', CHUNK_MAX_TOKENS: '2048' });
    llm = setup.llm;
    parley = await startParley({ dataDir: setup.dataDir, env: setup.env });
  }, 120_000);
  afterEach(() => {
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('ingests it, and finds it by its other words and by the start of the long word', async () => {
    const long = letters(6_000);
    const answer = await ingest(parley, [
      file('sequence.txt', `The marsupial genome sequence follows: ${long}. End of sequence.`),
    ]);
    expect(answer).toMatchObject({ status: 200, body: { chunks: 1 } });
    expect(await listedSources(parley)).toContain('sequence.txt');
    // A search_documents query is at most 1,000 characters: the start of the word finds it.
    for (const query of ['marsupial genome', long.slice(0, 1_000)]) {
      const output = await searchThroughChat(parley, llm, query);
      expect(output.hits.map((hit) => hit.source)).toEqual(['sequence.txt']);
    }
  });

  it('cuts a long paragraph with no sentence end at once, answering everyone meanwhile', async () => {
    // A paragraph's sentences were found by reading ahead to the next mark from every word:
    // when that mark was inside a word ("3.5"), each word was read again to it (minutes).
    const paragraph = `The quokka census ${'counted again '.repeat(15_000)}at version 3.5`;
    const ingested = ingest(parley, [file('census.txt', paragraph)]);
    const longestWaitMs = await longestHealthWait(parley, ingested);
    const answer = await ingested;
    expect(answer.status).toBe(200);
    expect((answer.body as { chunks: number }).chunks).toBeGreaterThan(1);
    const output = await searchThroughChat(parley, llm, 'quokka census');
    expect(output.hits.map((hit) => hit.source)).toContain('census.txt');
    expect(longestWaitMs).toBeLessThan(3_000);
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { searchThroughChat } from '../support/search-through-chat.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const TOP_K = 5;

/**
 * A large new version of a document is written a batch at a time under a hidden row, then
 * made visible at once (src/storage/hidden-documents.ts). A search meanwhile must find what it
 * found before, the old version, as many hits as ever: the hidden chunks ranked best for the
 * query, were cut into the candidates and then left out, and the search came back short
 * (empty here).
 */
describe.each(ENGINES)('a search while a large version is written on the %s engine', (engine) => {
  let setup: EngineSetup;
  let llm: FakeLlmServer;
  let parley: RunningParley;

  beforeAll(async () => {
    setup = await engineSetup(engine, {
      EMBEDDINGS_PROVIDER: 'none',
      CHUNK_MAX_TOKENS: '32',
      SEARCH_TOP_K: String(TOP_K),
    });
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

  it('returns the old version, all of its hits, until the new one is visible', async () => {
    // The old version mentions the word once a long paragraph; the new one in every short one,
    // so each of its thousands of chunks outranks the old ones.
    const old = Array.from(
      { length: 8 },
      (_, i) => `Old paragraph ${i}: the quokka lives on a small island near the coast.`,
    );
    const fresh = Array.from({ length: 3_000 }, (_, i) => `New quokka quokka ${i}.`);
    expect(await ingest(parley, [file('notes.txt', old.join('\n\n'))])).toMatchObject({
      status: 200,
    });
    const before = await searchThroughChat(parley, llm, 'quokka');
    expect(before.hits).toHaveLength(TOP_K);
    expect(before.hits.every((hit) => hit.text.startsWith('Old paragraph'))).toBe(true);

    let written = false;
    const writing = ingest(parley, [file('notes.txt', fresh.join('\n\n'))]).finally(() => {
      written = true;
    });
    const during: string[][] = [];
    while (!written) {
      const { hits } = await searchThroughChat(parley, llm, 'quokka');
      if (!written) during.push(hits.map((hit) => hit.text));
    }
    expect((await writing).status).toBe(200);
    // The write outlasts a few searches (it is 24 transactions of 128 chunks).
    expect(during.length).toBeGreaterThan(0);
    for (const texts of during) {
      expect(texts).toHaveLength(TOP_K);
      // One version or the other, never a mixture.
      const olds = texts.filter((text) => text.startsWith('Old paragraph')).length;
      expect([0, TOP_K]).toContain(olds);
    }
    const after = await searchThroughChat(parley, llm, 'quokka');
    expect(after.hits).toHaveLength(TOP_K);
    expect(after.hits.every((hit) => hit.text.startsWith('New quokka'))).toBe(true);
  }, 180_000);
});

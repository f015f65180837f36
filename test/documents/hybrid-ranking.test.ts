import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { VECTOR_SETUPS } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { type SearchOutput, searchThroughChat } from '../support/search-through-chat.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * How hybrid search ranks what a user would see, with an embedder whose vectors are chosen:
 * a text gets the vector of the first marker it contains, and a zero vector (no direction,
 * as an embedding API may return for text it cannot read) when it contains none.
 */
const VECTORS: [marker: string, vector: number[]][] = [
  ['경복궁 궁궐', [1, 0, 0, 0]], // the query
  ['marsupial', [0.99, 0.1, 0, 0]], // its nearest neighbour, without the query's words
  ['서울은', [0, 1, 0, 0]], // the one chunk that has the query's words
  ['quokka Rottnest', [0, 0, 1, 0]],
  ['Striped horses', [0, 0, 0, 1]], // the nearest neighbour of "zebra"
  ['zebra', [0, 0, 0, 1]], // the query
  ['Zebra herd', [0, 0.6, 0, 0.8]],
];
const embed = (text: string) =>
  VECTORS.find(([marker]) => text.includes(marker))?.[1] ?? [0, 0, 0, 0];

const ANIMALS = 'The quokka is a small marsupial found on Rottnest Island. It is mostly nocturnal.';
const KOREA =
  '서울은 대한민국의 수도이다. 한강이 도시를 가로질러 흐른다. 경복궁은 조선 시대의 궁궐이다.';

describe.each(VECTOR_SETUPS)('hybrid ranking on $name', (setup) => {
  let llm: FakeLlmServer;
  let harness: EngineSetup;
  let parley: RunningParley;
  let hybrid = false;

  /** What search_documents returned to the model for `query`. */
  const search = async (query: string): Promise<SearchOutput> => {
    const output = await searchThroughChat(parley, llm, query);
    expect(output.retrieval).toBe(hybrid ? 'hybrid' : 'lexical');
    return output;
  };
  const sources = (output: SearchOutput) => output.hits.map((hit) => hit.source);
  /** Ingests a text file and, when vectors are in use, waits until it is embedded. */
  const ingestText = async (source: string, text: string) => {
    const answer = await ingest(parley, [
      file(source.split('/').at(-1) as string, text),
      { name: 'source', value: source },
    ]);
    expect(answer.status).toBe(200);
    if (!hybrid) return answer.body;
    const embedded = () =>
      new Set(
        llm.requests
          .filter((request) => request.path === '/v1/embeddings')
          .flatMap((request) => (request.body as { input: string[] }).input)
          .filter((input) => text.includes(input)),
      ).size;
    await waitFor(() => embedded() === answer.body.chunks, 30_000);
    return answer.body;
  };

  beforeAll(async () => {
    harness = await engineSetup(setup.engine, {}, { embed }, { pgvector: setup.pgvector });
    llm = harness.llm;
    parley = await startParley({
      dataDir: harness.dataDir,
      env: {
        ...harness.env,
        EMBEDDINGS_PROVIDER: 'openai',
        EMBEDDINGS_BASE_URL: llm.url,
        EMBEDDINGS_MODEL: 'fake-embed',
        EMBEDDINGS_MAX_RETRIES: '0',
      },
    });
    // A PostgreSQL server without pgvector searches lexically, and the same user-visible
    // expectations hold without fusion.
    hybrid = (await parley.waitForLog((line) => line.msg === 'database ready')).vector === true;
    expect(hybrid).toBe(setup.pgvector);
    await ingestText('animals.txt', ANIMALS);
    await ingestText('notes/ko/korea.txt', KOREA);
  }, 120_000);
  afterEach(() => {
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
  });
  afterAll(async () => {
    await parley?.stop();
    await harness?.cleanup();
  });

  it('ranks the only chunk with the query’s words first, though its vector is not the nearest', async () => {
    const output = await search('경복궁 궁궐');
    expect(sources(output)[0]).toBe('notes/ko/korea.txt');
    const [first, second] = output.hits;
    if (second) expect(first?.score).toBeGreaterThan(second.score as number);
  });

  it('ranks lexically when the query’s vector is zero, with every score a number', async () => {
    const output = await search('한강 수도'); // no marker: a zero vector
    expect(sources(output)[0]).toBe('notes/ko/korea.txt');
    for (const hit of output.hits) expect(Number.isFinite(hit.score)).toBe(true);
  });

  it('answers lexically when the query cannot be embedded (the embeddings server fails)', async () => {
    // Only a hybrid search embeds the query: the next embeddings request is the query's.
    if (hybrid) llm.failEmbeddings(reply.error(503));
    const output = await searchThroughChat(parley, llm, '한강 수도');
    expect(output.retrieval).toBe('lexical');
    expect(sources(output)[0]).toBe('notes/ko/korea.txt');
  });

  it('scores a chunk whose vector is zero at the floor, never null, in a repeatable order', async () => {
    // No marker left in the text: the chunk's vector is zero. It still has "Rottnest".
    await ingestText('animals.txt', 'A small wallaby lives on Rottnest Island.');
    const output = await search('quokka Rottnest');
    expect(sources(output)).toContain('animals.txt');
    for (const hit of output.hits) expect(Number.isFinite(hit.score)).toBe(true);
    const scores = output.hits.map((hit) => hit.score as number);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(await search('quokka Rottnest')).toEqual(output);
  });

  it('still credits a chunk missing from a lexical list that was cut at its depth', async () => {
    // 60 chunks say "zebra": more than the 50 candidates BM25 hands to fusion, so a chunk
    // missing from that list may rank 51st and is not known to lack the word.
    const herds = Array.from(
      { length: 60 },
      (_, i) =>
        `Zebra herd ${i} crossed river ${i} at dawn, ${'grazing slowly along the banks, '.repeat(24)}`,
    ).join('\n\n');
    expect((await ingestText('herds.txt', herds)).chunks).toBeGreaterThanOrEqual(51);
    await ingestText('horses.txt', 'Striped horses are found in Africa.');
    const output = await search('zebra');
    if (hybrid) {
      // The nearest vector, and BM25's lowest score of its cut list: first.
      expect(sources(output)[0]).toBe('horses.txt');
    } else {
      expect(sources(output)).not.toContain('horses.txt');
    }
  });
});

import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/storage/database.ts';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { multipartBody } from '../support/multipart.ts';
import type { SearchOutput } from '../support/search-through-chat.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * A user's documents through their life with vectors on, on both engines (each with
 * pgvector): uploaded and found by meaning, replaced by a new version (the old text is no
 * longer found, and its vector is gone), and deleted with the user (no vector of their words
 * is left, while another user's copy of the same text keeps its own).
 */
const ADMIN = 'vector-lifecycle-admin';
const OTTER = 'The sea otter floats on kelp beds while it eats.';
const GRANITE = 'Granite cliffs rise above the harbour.';
/** Each query shares no word with its text: only its vector finds it. */
const VECTORS: [marker: string, vector: number[]][] = [
  ['sea otter', [0.9, 0.1, 0, 0]],
  ['buoyant creatures', [1, 0, 0, 0]],
  ['Kelp note', [1, 0, 0, 0]], // nearer to the query than the otter: another user's texts
  ['Granite', [0, 1, 0, 0]],
  ['hard stone', [0, 1, 0, 0]],
];
/** More of bob's texts nearer to alice's query than hers than a search's depth (50). */
const KELP = Array.from(
  { length: 60 },
  (_, i) =>
    `Kelp note ${i}: the canopy number ${i} sways in the cold current while small fish shelter below its long fronds and wait for the tide to turn.`,
);
const embed = (text: string) =>
  VECTORS.find(([marker]) => text.includes(marker))?.[1] ?? [0, 0, 0, 1];

describe.each(ENGINES)('a user’s documents with vectors on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let dataDir: string;
  let parley: RunningParley;
  const keys: Record<string, string> = {};

  const embeddedTexts = () =>
    llm.requests
      .filter((request) => request.path === '/v1/embeddings')
      .flatMap((request) => (request.body as { input: string[] }).input);
  const upload = async (key: string, filename: string, text: string) => {
    const { body, contentType } = multipartBody([{ name: 'file', filename, data: text }]);
    const response = await parley.fetch('/ingest', {
      method: 'POST',
      token: key,
      headers: { 'content-type': contentType },
      body: new Uint8Array(body),
    });
    expect(response.status).toBe(200);
  };
  /** What search_documents gave the model when this user asked for `query`. */
  const search = async (key: string, query: string): Promise<SearchOutput> => {
    llm.enqueue(reply.toolCalls([{ name: 'search_documents', args: { query } }]), reply.text('.'));
    const stream = await readChat(
      await parley.fetch('/chat', {
        method: 'POST',
        token: key,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: query }),
      }),
    );
    expect(stream.error).toBeUndefined();
    const tool = llm.chats.at(-1)?.body.messages.findLast((message) => message.role === 'tool');
    const output = JSON.parse(String(tool?.content)) as SearchOutput;
    expect(output.retrieval).toBe('hybrid');
    return output;
  };
  const texts = (output: SearchOutput) => output.hits.map((hit) => hit.text);

  beforeAll(async () => {
    setup = await engineSetup(engine, {}, { embed });
    ({ llm, dataDir } = setup);
    parley = await startParley({
      dataDir,
      token: null,
      env: {
        ...setup.env,
        API_TOKEN: ADMIN,
        EMBEDDINGS_PROVIDER: 'openai',
        EMBEDDINGS_BASE_URL: llm.url,
        EMBEDDINGS_MODEL: 'fake-embed',
        // One chunk per paragraph of bob's kelp notes.
        CHUNK_MAX_TOKENS: '40',
        CHUNK_OVERLAP_TOKENS: '0',
        QUERY_REWRITE_ENABLED: 'false',
        CRAG_ENABLED: 'false',
      },
    });
    for (const user of ['alice', 'bob']) {
      const created = await parley.fetch('/admin/users', {
        method: 'POST',
        token: ADMIN,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: user }),
      });
      keys[user] = ((await created.json()) as { key: string }).key;
    }
  }, 120_000);
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('finds an uploaded text by meaning once it is embedded', async () => {
    await upload(keys.alice as string, 'notes.txt', OTTER);
    await waitFor(() => embeddedTexts().includes(OTTER), 30_000);
    const output = await search(keys.alice as string, 'buoyant creatures');
    expect(texts(output)[0]).toContain('sea otter');
  });

  it('finds only the new version of a replaced document, the old text no longer', async () => {
    await upload(keys.bob as string, 'harbour.txt', GRANITE);
    await waitFor(() => embeddedTexts().includes(GRANITE), 30_000);
    await upload(keys.alice as string, 'notes.txt', GRANITE);
    const stone = await search(keys.alice as string, 'hard stone');
    expect(stone.hits[0]).toMatchObject({ source: 'notes.txt' });
    expect(texts(stone)[0]).toContain('Granite');
    // Bob's copy of the same text is his alone.
    expect(stone.hits.map((hit) => hit.source)).not.toContain('harbour.txt');
    const otter = await search(keys.alice as string, 'buoyant creatures');
    expect(texts(otter).join(' ')).not.toContain('sea otter');
    // The same text as bob's: embedded once, shared by content.
    expect(embeddedTexts().filter((text) => text === GRANITE)).toHaveLength(1);
  });

  it('finds a user’s own text by meaning though another user has more, nearer ones', async () => {
    await upload(keys.bob as string, 'kelp.txt', KELP.join('\n\n'));
    await waitFor(() => KELP.every((text) => embeddedTexts().includes(text)), 30_000);
    await upload(keys.alice as string, 'otters.txt', OTTER);
    await waitFor(
      () => embeddedTexts().filter((text) => text === OTTER).length === 2, // once per version
      30_000,
    );
    const output = await search(keys.alice as string, 'buoyant creatures');
    expect(output.hits[0]).toMatchObject({ source: 'otters.txt' });
    expect(output.hits.map((hit) => hit.source)).not.toContain('kelp.txt');
  });

  it('deletes a user with their vectors; another user’s copy of the same text keeps its own', async () => {
    const deleted = await parley.fetch('/admin/users/alice', { method: 'DELETE', token: ADMIN });
    expect(deleted.status).toBe(200);
    const stone = await search(keys.bob as string, 'hard stone');
    expect(stone.hits[0]).toMatchObject({ source: 'harbour.txt' });

    // What is left in the database: bob's texts' vectors, and none without a chunk.
    await parley.stop();
    const database = await openDatabase(
      { ...parseConfig({}), DATA_DIR: dataDir, DATABASE_URL: setup.env.DATABASE_URL },
      pino({ level: 'silent' }),
    );
    try {
      const client = database.db.$client;
      const { rows } = await client.query<{ content: string | null }>(
        `SELECT (SELECT c.content FROM chunks c WHERE c.content_hash = e.content_hash LIMIT 1)
           AS content
         FROM chunk_embeddings e`,
      );
      expect(rows.map((row) => row.content).sort()).toEqual([GRANITE, ...KELP].sort());
    } finally {
      await database.close();
    }
  });
});

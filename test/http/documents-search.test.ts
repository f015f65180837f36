import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ChatStream, readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES, VECTOR_SETUPS } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type Seed, seed } from '../support/seed.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const filler = (topic: string, n: number) =>
  Array.from({ length: n }, (_, i) => `Paragraph ${i} of the ${topic} part of the guide.`).join(
    ' ',
  );

/** Documents as POST /ingest would store them (through the real DocumentService). */
const DOCUMENTS: NonNullable<Seed['documents']> = [
  {
    source: 'manuals/guide.pdf',
    pages: [
      {
        page: 1,
        text: `# Parley guide\n\nParley is a self-hosted assistant. ${filler('intro', 8)}`,
      },
      {
        page: 2,
        text: `## Install\n\nTo install Parley, run npm install and start it with npm start. ${filler('setup', 8)}`,
      },
      {
        page: 3,
        text: `## Backups\n\nCopy the data directory every night to keep backups safe. ${filler('backup', 8)}`,
      },
    ],
  },
  {
    source: 'korean/seoul.txt',
    chunks: ['서울에서 가장 큰 전통 시장은 광장시장입니다. 빈대떡과 마약김밥이 유명합니다.'],
  },
  // A conversation memory of alice's: hers alone.
  {
    source: 'memory/alice-1',
    userId: 'alice',
    chunks: ['Alice said her secret project codename is bluefinch.'],
  },
];

interface ToolOutput {
  query: string;
  retrieval: 'lexical' | 'hybrid';
  hits: { source: string; page: number | null; score: number; text: string }[];
}

describe.each(ENGINES)('search_documents on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let parley: RunningParley;

  const ask = async (userId: string, message: string): Promise<ChatStream> =>
    readChat(
      await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message, user_id: userId }),
      }),
    );
  /** What search_documents returned, as the model received it in the next request. */
  const lastToolOutput = (): ToolOutput => {
    const messages = llm.chats.at(-1)?.body.messages ?? [];
    const tool = messages.findLast((message) => message.role === 'tool');
    return JSON.parse(String(tool?.content)) as ToolOutput;
  };
  /** Asks with a scripted call of search_documents, then a scripted answer. */
  const searchThroughChat = async (userId: string, query: string, answer = 'Here it is.') => {
    llm.enqueue(
      reply.toolCalls([{ name: 'search_documents', args: { query } }]),
      reply.text(answer),
    );
    const stream = await ask(userId, `question about ${query}`);
    return { stream, output: lastToolOutput() };
  };

  beforeAll(async () => {
    setup = await engineSetup(engine, { EMBEDDINGS_PROVIDER: 'none', RAG_SHOW_SOURCES: 'true' });
    const { dataDir, env } = setup;
    llm = setup.llm;
    await seed({ dataDir, databaseUrl: env.DATABASE_URL }, { documents: DOCUMENTS });
    parley = await startParley({ dataDir, env });
    // Seeding, then starting Parley, opens the database twice: slow on a loaded machine.
  }, 120_000);
  afterEach(() => {
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
  });
  afterAll(async () => {
    await parley?.stop();
    await setup?.cleanup();
  });

  it('answers from the documents and ends the stream with the sources list', async () => {
    const { stream, output } = await searchThroughChat(
      'carol',
      'how to install parley',
      'Run npm install.',
    );
    expect(stream.error).toBeUndefined();
    expect(output.query).toBe('how to install parley');
    expect(output.retrieval).toBe('lexical');
    expect(output.hits[0]).toMatchObject({ source: 'manuals/guide.pdf', page: 2 });
    expect(output.hits[0]?.text).toContain('run npm install');
    expect(output.hits[0]?.score).toBeGreaterThan(0);
    // The sources are ordinary fragments after the answer, so every client shows them.
    expect(stream.text.startsWith('Run npm install.\n\nSources:\n- manuals/guide.pdf, p. 2')).toBe(
      true,
    );
    expect(stream.fragments).toContain('\n\nSources:');
    expect(stream.ended).toBe(true);
  });

  it('finds Korean text whose words carry other particles than the question', async () => {
    const { stream, output } = await searchThroughChat('carol', '서울의 전통 시장');
    expect(output.hits.map((hit) => hit.source)).toEqual(['korean/seoul.txt']);
    expect(output.hits[0]?.page).toBeNull();
    expect(stream.text).toBe('Here it is.\n\nSources:\n- korean/seoul.txt');
  });

  it('says explicitly when nothing matched, and lists no sources', async () => {
    const { stream, output } = await searchThroughChat('carol', 'zebra quantum chromodynamics');
    expect(output.hits).toEqual([]);
    expect(stream.text).toBe('Here it is.');
  });

  it("finds a user's own memory for that user only, and never lists it", async () => {
    const mine = await searchThroughChat('alice', 'project codename');
    expect(mine.output.hits.map((hit) => hit.source)).toEqual(['memory/alice-1']);
    const theirs = await searchThroughChat('bob', 'project codename');
    expect(theirs.output.hits).toEqual([]);

    expect(await (await parley.fetch('/documents')).json()).toEqual({
      documents: ['korean/seoul.txt', 'manuals/guide.pdf'],
    });
    const deleted = await parley.fetch('/documents/memory/alice-1', { method: 'DELETE' });
    expect(deleted.status).toBe(404);
    const again = await searchThroughChat('alice', 'project codename');
    expect(again.output.hits.map((hit) => hit.source)).toEqual(['memory/alice-1']);
  });

  it('a deleted document is no longer found', async () => {
    const deleted = await parley.fetch('/documents/korean/seoul.txt', { method: 'DELETE' });
    expect(deleted.status).toBe(200);
    const { output } = await searchThroughChat('carol', '광장시장');
    expect(output.hits).toEqual([]);
  });

  it('logs no document content or query without RAG_VERBOSE', () => {
    const output = parley.output();
    for (const secret of ['bluefinch', '광장시장', 'project codename', 'zebra quantum']) {
      expect(output).not.toContain(secret);
    }
  });
});

describe.each(VECTOR_SETUPS)('hybrid search, query rewriting and RAG_VERBOSE on $name', (setup) => {
  let llm: FakeLlmServer;
  let harness: EngineSetup;
  let parley: RunningParley;
  const KOREAN = DOCUMENTS[1]?.chunks?.[0] as string;

  const ask = async (userId: string, message: string): Promise<ChatStream> =>
    readChat(
      await parley.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message, user_id: userId }),
      }),
    );
  const lastToolOutput = (): ToolOutput => {
    const messages = llm.chats.at(-1)?.body.messages ?? [];
    const tool = messages.findLast((message) => message.role === 'tool');
    return JSON.parse(String(tool?.content)) as ToolOutput;
  };
  const embeddedTexts = () =>
    llm.requests
      .filter((request) => request.path === '/v1/embeddings')
      .flatMap((request) => (request.body as { input: string[] }).input);

  beforeAll(async () => {
    harness = await engineSetup(setup.engine, {}, {}, { pgvector: setup.pgvector });
    const { dataDir } = harness;
    llm = harness.llm;
    await seed(
      { dataDir, databaseUrl: harness.env.DATABASE_URL },
      // The same text under two sources: embedded once.
      { documents: [...DOCUMENTS, { source: 'copies/seoul-again.txt', chunks: [KOREAN] }] },
    );
    parley = await startParley({
      dataDir,
      env: {
        ...harness.env,
        EMBEDDINGS_PROVIDER: 'openai',
        EMBEDDINGS_BASE_URL: llm.url,
        EMBEDDINGS_MODEL: 'fake-embed',
        QUERY_REWRITE_ENABLED: 'true',
        RAG_VERBOSE: 'true',
      },
    });
    // Seeding, then starting Parley, opens the database twice: slow on a loaded machine.
  }, 120_000);
  afterEach(() => {
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
  });
  afterAll(async () => {
    await parley?.stop();
    await harness?.cleanup();
  });

  if (setup.pgvector) {
    it('embeds the stored chunks in the background, each distinct text once, and fuses', async () => {
      await expect.poll(() => embeddedTexts().length, { timeout: 30_000 }).toBe(5);
      const texts = embeddedTexts();
      expect(new Set(texts).size).toBe(texts.length);
      expect(texts.filter((text) => text === KOREAN)).toHaveLength(1);

      llm.enqueue(
        reply.toolCalls([{ name: 'search_documents', args: { query: '서울의 전통 시장' } }]),
        reply.text('광장시장이에요.'),
      );
      await ask('erin', '서울 시장 알려줘');
      const output = lastToolOutput();
      expect(output.retrieval).toBe('hybrid');
      expect(
        output.hits
          .slice(0, 2)
          .map((hit) => hit.source)
          .sort(),
      ).toEqual(['copies/seoul-again.txt', 'korean/seoul.txt']);
      // The query was embedded too: one more request, with the query alone.
      expect(embeddedTexts().at(-1)).toBe('서울의 전통 시장');
    });
  } else {
    it('serves lexical search without pgvector, says so, and calls no embeddings API', async () => {
      llm.enqueue(
        reply.toolCalls([{ name: 'search_documents', args: { query: '서울의 전통 시장' } }]),
        reply.text('광장시장이에요.'),
      );
      await ask('erin', '서울 시장 알려줘');
      expect(lastToolOutput().retrieval).toBe('lexical');
      expect(lastToolOutput().hits.length).toBeGreaterThan(0);
      expect(embeddedTexts()).toEqual([]);
      await parley.waitForLog((line) => /pgvector is not installed/.test(line.msg));
      await parley.waitForLog((line) => /no pgvector/.test(line.msg));
    });
  }

  it('rewrites a follow-up question into a standalone query using the conversation', async () => {
    llm.enqueue(reply.text('Parley is a self-hosted assistant.'));
    await ask('dave', 'What is in the Parley guide?');
    llm.enqueue(
      reply.toolCalls([{ name: 'search_documents', args: { query: 'how to do that' } }]),
      reply.text('backups of the Parley data directory'), // the rewrite
      reply.text('Copy the data directory nightly.'),
    );
    const stream = await ask('dave', 'And how do I back it up?');
    const rewrite = llm.chats.at(-2)?.body;
    expect(rewrite?.stream).toBeFalsy();
    expect(JSON.stringify(rewrite?.messages)).toContain('What is in the Parley guide?');
    expect(JSON.stringify(rewrite?.messages)).toContain('how to do that');
    const output = lastToolOutput();
    expect(output.query).toBe('backups of the Parley data directory');
    expect(output.hits[0]).toMatchObject({ source: 'manuals/guide.pdf', page: 3 });
    expect(stream.text).toBe('Copy the data directory nightly.');
  });

  it('cuts a long rewritten query between characters, never inside an emoji', async () => {
    // The rewrite is cut at 1000; "x" put a cut at 1000 UTF-16 units in the middle of an
    // emoji, and half of one went on to the embeddings request and the database.
    llm.enqueue(reply.text('Parley keeps its data in one directory.'));
    await ask('ivy', 'Where does Parley keep its data?');
    llm.enqueue(
      reply.toolCalls([{ name: 'search_documents', args: { query: 'that, with magnifiers' } }]),
      reply.text(`x${'🔍'.repeat(1200)}`), // the rewrite
      reply.text('Nothing found.'),
    );
    await ask('ivy', 'And with magnifiers?');
    const { query } = lastToolOutput();
    expect(query.isWellFormed()).toBe(true);
    expect(query).toBe(`x${'🔍'.repeat(999)}`);
  });

  it('logs queries and hits under RAG_VERBOSE', async () => {
    await parley.settled();
    const searches = parley.logs.filter((line) => line.msg === 'document search');
    expect(searches.length).toBeGreaterThan(0);
    expect(JSON.stringify(searches)).toContain('backups of the Parley data directory');
    expect(JSON.stringify(searches)).toContain('manuals/guide.pdf');
  });
});

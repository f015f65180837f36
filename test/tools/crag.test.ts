import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { OVERSIZED_BYTES, oversizedAnswers } from '../support/body-endings.ts';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import { type FakeSearchServer, startFakeSearchServer } from '../support/fake-search-server.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

type ToolOutput = {
  query: string;
  hits: unknown[];
  web_fallback?: { provider?: string; results?: { url: string }[]; error?: string };
};

/**
 * The corrective fallback (CRAG_ENABLED, spec §1 and §8): an empty document search brings one
 * web search with it, at most once per chat, and never when documents matched, when the flag
 * is off or when no web search is configured.
 */
describe.each(ENGINES)('the corrective web fallback on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let search: FakeSearchServer;
  let setup: EngineSetup;
  let dataDir: string;
  let parley: RunningParley | undefined;

  /** Each case is a start-up setting: restart on the same data (a fresh database is slow). */
  async function runWith(env: Record<string, string>): Promise<RunningParley> {
    await parley?.stop();
    parley = await startParley({
      dataDir,
      env: { ...setup.env, ...env },
    });
    return parley;
  }
  const withSearch = { WEB_SEARCH_PROVIDER: 'searxng', SEARXNG_URL: '' };

  beforeAll(async () => {
    setup = await engineSetup(engine, { EMBEDDINGS_PROVIDER: 'none' });
    ({ llm, dataDir } = setup);
    search = await startFakeSearchServer('searxng');
    search.results([
      { title: 'Moon base news', url: 'https://example.org/moon', snippet: 'Opens in 2031.' },
    ]);
    withSearch.SEARXNG_URL = search.url;
  });
  afterEach(() => {
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
    search.assertNoUnexpected();
  });
  afterAll(async () => {
    await parley?.stop();
    await search?.close();
    await setup?.cleanup();
  });

  /** The model searches documents for each query in turn, then answers. */
  async function searchDocuments(server: RunningParley, ...queries: string[]) {
    llm.enqueue(
      ...queries.map((query) => reply.toolCalls([{ name: 'search_documents', args: { query } }])),
      reply.text('done'),
    );
    const first = llm.chats.length;
    const stream = await readChat(
      await server.fetch('/chat', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'what about the moon base?', user_id: 'crag' }),
      }),
    );
    expect(stream.error).toBeUndefined();
    // Request k+1 of this chat carries the result of the k-th search.
    return queries.map((_, k) => {
      const messages = llm.chats[first + k + 1]?.body.messages ?? [];
      const tool = messages.findLast((message) => message.role === 'tool');
      return JSON.parse(String(tool?.content)) as ToolOutput;
    });
  }

  it('runs one web search when documents find nothing, and not a second time', async () => {
    const server = await runWith({ ...withSearch, CRAG_ENABLED: 'true', RAG_VERBOSE: 'true' });
    const before = search.queries.length;
    const [first, second] = await searchDocuments(server, 'moon base 2031', 'moon base opening');

    expect(first?.hits).toEqual([]);
    expect(first?.web_fallback?.results?.map((r) => r.url)).toEqual(['https://example.org/moon']);
    expect(second?.hits).toEqual([]);
    expect(second?.web_fallback).toBeUndefined();
    expect(search.queries.slice(before)).toEqual(['moon base 2031']);
    await expect
      .poll(() => server.logs.find((l) => l.msg.includes('searching the web instead (CRAG)')))
      .toMatchObject({ query: 'moon base 2031' });
  });

  it('runs again in the next chat: the limit is per request', async () => {
    const server = await runWith({ ...withSearch, CRAG_ENABLED: 'true' });
    const before = search.queries.length;
    await searchDocuments(server, 'first chat');
    const [next] = await searchDocuments(server, 'second chat');
    expect(next?.web_fallback?.results).toHaveLength(1);
    expect(search.queries.slice(before)).toEqual(['first chat', 'second chat']);
    // Without RAG_VERBOSE the fallback is logged without the query.
    expect(server.output()).toContain('searching the web instead (CRAG)');
    expect(server.output()).not.toContain('"query":"second chat"');
  });

  it('does not search the web when documents matched', async () => {
    const server = await runWith({ ...withSearch, CRAG_ENABLED: 'true' });
    const stored = await ingest(server, [
      file('moon.txt', 'The lunar greenhouse opens in spring 2031, beside the moon base.'),
    ]);
    expect(stored.status).toBe(200);
    const before = search.queries.length;
    const [found] = await searchDocuments(server, 'lunar greenhouse');
    expect(found?.hits.length).toBeGreaterThan(0);
    expect(found?.web_fallback).toBeUndefined();
    expect(search.queries.length).toBe(before);
  });

  it('does nothing when CRAG_ENABLED is off', async () => {
    const server = await runWith({ ...withSearch });
    const before = search.queries.length;
    const [empty] = await searchDocuments(server, 'nothing here');
    expect(empty).toMatchObject({ hits: [] });
    expect(empty?.web_fallback).toBeUndefined();
    expect(search.queries.length).toBe(before);
  });

  it('does nothing, and says so at start, when no web search is configured', async () => {
    const server = await runWith({ CRAG_ENABLED: 'true' });
    expect(server.output()).toContain('CRAG_ENABLED is set but WEB_SEARCH_PROVIDER is none');
    const before = search.queries.length;
    const [empty] = await searchDocuments(server, 'nothing here');
    expect(empty).toMatchObject({ hits: [] });
    expect(empty?.web_fallback).toBeUndefined();
    expect(search.queries.length).toBe(before);
  });

  it('tells the model why when the web search fails, and the chat carries on', async () => {
    const server = await runWith({ ...withSearch, CRAG_ENABLED: 'true' });
    search.failNext('rate-limited');
    const [failed] = await searchDocuments(server, 'volcano eruption forecast');
    expect(failed?.hits).toEqual([]);
    expect(failed?.web_fallback?.error).toMatch(/\S/);
  });

  describe('when the web search answer does not end whole', () => {
    let server: RunningParley;
    beforeAll(async () => {
      server = await runWith({ ...withSearch, CRAG_ENABLED: 'true', WEB_SEARCH_TIMEOUT_MS: '500' });
    }, 60_000);

    it.each([
      ['cut-mid-body', /unreadable answer/],
      ['truncated-json', /unreadable answer/],
      ['stall-mid-body', /took longer than 500 ms/],
      ['html-502', /failed \(HTTP 502\)/],
    ] as const)(
      'tells the model why when it is %s, taking no result from it',
      async (ending, reason) => {
        search.endNext(ending);
        const [failed] = await searchDocuments(server, 'volcano eruption forecast');
        expect(failed?.hits).toEqual([]);
        expect(failed?.web_fallback?.results).toBeUndefined();
        expect(failed?.web_fallback?.error).toMatch(reason);
      },
    );
  });

  describe('when the web search answers over its bound', () => {
    let server: RunningParley;
    beforeAll(async () => {
      server = await runWith({
        ...withSearch,
        CRAG_ENABLED: 'true',
        WEB_SEARCH_TIMEOUT_MS: '60000',
      });
    }, 60_000);

    it('reads no further than 4 MiB and tells the model why, taking no result', async () => {
      const answers = oversizedAnswers.length;
      search.endNext('oversized');
      const [failed] = await searchDocuments(server, 'volcano eruption forecast');
      expect(failed?.hits).toEqual([]);
      expect(failed?.web_fallback?.results).toBeUndefined();
      expect(failed?.web_fallback?.error).toMatch(/too large to read/);
      const sent = oversizedAnswers[answers];
      await sent?.done;
      expect(sent?.closedEarly).toBe(true);
      expect(sent?.written).toBeLessThan(OVERSIZED_BYTES / 4);
    }, 60_000);
  });
});

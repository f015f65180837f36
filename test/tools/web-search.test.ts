import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type BodyEnding, OVERSIZED_BYTES, oversizedAnswers } from '../support/body-endings.ts';
import { readChat } from '../support/chat-stream.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { type FakeLlmServer, reply } from '../support/fake-llm-server.ts';
import {
  type FakeFailure,
  type FakeSearchServer,
  type SearchProvider,
  startFakeSearchServer,
} from '../support/fake-search-server.ts';
import { longestHealthWait } from '../support/health-during.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

const PROVIDERS: SearchProvider[] = ['searxng', 'tavily', 'brave'];
const QUERY = '부산 불꽃축제 2026 일정';

/** Eight results with long snippets: more than Parley may hand to the model. */
const RESULTS = Array.from({ length: 8 }, (_, i) => ({
  title: `<strong>Result</strong> ${i} &amp; more`,
  url: `https://example.org/page-${i}`,
  snippet: `Snippet ${i}: ${'가나다 '.repeat(100)}`,
}));

type Message = { role: string; content?: unknown };

const envFor = (search: FakeSearchServer): Record<string, string> => {
  switch (search.provider) {
    case 'searxng':
      return { WEB_SEARCH_PROVIDER: 'searxng', SEARXNG_URL: search.url };
    case 'tavily':
      return {
        WEB_SEARCH_PROVIDER: 'tavily',
        TAVILY_API_KEY: search.apiKey,
        TAVILY_BASE_URL: search.url,
      };
    case 'brave':
      return {
        WEB_SEARCH_PROVIDER: 'brave',
        BRAVE_API_KEY: search.apiKey,
        BRAVE_BASE_URL: search.url,
      };
  }
};

describe.each(ENGINES)('web_search on the %s engine', (engine) => {
  let llm: FakeLlmServer;
  let setup: EngineSetup;
  let dataDir: string;
  let base: Record<string, string>;
  let parley: RunningParley | undefined;
  const searches = new Map<SearchProvider, FakeSearchServer>();

  /** Each provider is a start-up setting: restart on the same database (a new one is slow). */
  async function runWith(env: Record<string, string>): Promise<void> {
    await parley?.stop();
    parley = await startParley({ dataDir, env });
  }

  beforeAll(async () => {
    setup = await engineSetup(engine, {
      WEB_SEARCH_MAX_RESULTS: '3',
      WEB_SEARCH_SNIPPET_CHARS: '100',
      WEB_SEARCH_TIMEOUT_MS: '500',
    });
    ({ llm, dataDir, env: base } = setup);
    for (const provider of PROVIDERS) searches.set(provider, await startFakeSearchServer(provider));
  });
  afterEach(() => {
    llm.assertNoUnexpected();
    llm.assertAllConsumed();
    for (const search of searches.values()) search.assertNoUnexpected();
  });
  afterAll(async () => {
    await parley?.stop();
    for (const search of searches.values()) await search.close();
    await setup?.cleanup();
  });

  /** Asks a question the model answers with one web_search call. */
  async function searchThrough(userId: string) {
    const server = parley as RunningParley;
    llm.enqueue(
      reply.toolCalls([{ name: 'web_search', args: { query: QUERY } }]),
      reply.text('Here is what I found.'),
    );
    const response = await server.fetch('/chat', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: `언제야? ${QUERY}`, user_id: userId }),
    });
    const stream = await readChat(response);
    const messages = llm.chats.at(-1)?.body.messages as Message[];
    const toolMessage = messages.find((m) => m.role === 'tool');
    return { stream, server, toolOutput: String(toolMessage?.content ?? '') };
  }

  const failures: [FakeFailure, (provider: SearchProvider) => RegExp][] = [
    ['rate-limited', () => /limiting requests \(HTTP 429\)/],
    [
      'unauthorized',
      (provider) => ({ searxng: /HTTP 403/, tavily: /HTTP 401/, brave: /HTTP 422/ })[provider],
    ],
    ['server-error', () => /failed \(HTTP 500\)/],
    ['stall', () => /took longer than 500 ms/],
  ];
  /** A 200 answer that does not arrive whole: never results taken from half an answer. */
  const endings: [BodyEnding, RegExp][] = [
    ['cut-after-headers', /sent an unreadable answer/],
    ['cut-mid-body', /sent an unreadable answer/],
    ['cut-last-byte', /sent an unreadable answer/],
    ['truncated-json', /sent an unreadable answer/],
    ['stall-mid-body', /took longer than 500 ms/],
    ['html-502', /failed \(HTTP 502\)/],
  ];

  describe.each(PROVIDERS)('with %s', (provider) => {
    beforeAll(async () => {
      await runWith({ ...base, ...envFor(searches.get(provider) as FakeSearchServer) });
    }, 60_000);

    it('gives the model title, URL and a bounded snippet of the top results', async () => {
      const search = searches.get(provider) as FakeSearchServer;
      search.results(RESULTS);
      const before = search.queries.length;
      const { stream, toolOutput } = await searchThrough(`ok-${provider}`);

      expect(stream.text).toBe('Here is what I found.');
      expect(search.queries.slice(before)).toEqual([QUERY]);
      const output = JSON.parse(toolOutput) as {
        provider: string;
        results: { title: string; url: string; snippet: string }[];
      };
      expect(output.provider).toBe(provider);
      expect(output.results.map((r) => r.url)).toEqual([
        'https://example.org/page-0',
        'https://example.org/page-1',
        'https://example.org/page-2',
      ]);
      expect(output.results[0]?.title).toBe('Result 0 & more');
      for (const result of output.results) {
        expect(result.snippet.length).toBeLessThanOrEqual(100);
        expect(result.snippet.startsWith('Snippet')).toBe(true);
      }
    });

    it('cuts a long snippet between characters, never inside an emoji', async () => {
      // An even prefix put the UTF-16 cut (99 units, then "…") in the middle of an emoji: half
      // a surrogate pair went to the model server.
      const search = searches.get(provider) as FakeSearchServer;
      search.results([
        { title: 'Emoji', url: 'https://example.org/emoji', snippet: `Sn${'🔎'.repeat(200)}` },
      ]);
      const { toolOutput } = await searchThrough(`emoji-${provider}`);
      const output = JSON.parse(toolOutput) as { results: { snippet: string }[] };
      const snippet = output.results[0]?.snippet ?? '';
      expect(snippet.isWellFormed()).toBe(true);
      expect(snippet).toBe(`Sn${'🔎'.repeat(97)}…`);
    });

    it('reads a result full of unclosed tags at once, answering everyone meanwhile', async () => {
      // A page's title or an engine's snippet can hold any text: tags were removed by a pattern
      // that read the rest of the text again from every `<` without a `>` (minutes here).
      const search = searches.get(provider) as FakeSearchServer;
      search.results([
        {
          title: `<b>Open</b> ${'<'.repeat(300_000)}`,
          url: 'https://example.org/unclosed',
          snippet: `<i>Snip</i>pet ${'<a '.repeat(100_000)}`,
        },
      ]);
      const searched = searchThrough(`unclosed-${provider}`);
      const longestWaitMs = await longestHealthWait(parley as RunningParley, searched);
      const output = JSON.parse((await searched).toolOutput) as {
        results: { title: string; snippet: string }[];
      };
      expect(output.results[0]?.title).toBe(`Open ${'<'.repeat(194)}…`);
      expect(output.results[0]?.snippet).toBe(`Snippet ${'<a '.repeat(30)}<…`);
      expect(longestWaitMs).toBeLessThan(3_000);
    });

    it('gives the model only results with a web address, filling the top results from the rest', async () => {
      const search = searches.get(provider) as FakeSearchServer;
      const web = RESULTS.slice(0, 3);
      search.results([
        { title: 'script', url: 'javascript:alert(document.cookie)', snippet: 'x' },
        ...web.slice(0, 1),
        { title: 'torrent', url: 'magnet:?xt=urn:btih:0123456789abcdef', snippet: 'x' },
        { title: 'inline', url: 'data:text/html,<script>alert(1)</script>', snippet: 'x' },
        ...web.slice(1),
      ]);
      const { toolOutput } = await searchThrough(`schemes-${provider}`);
      const output = JSON.parse(toolOutput) as { results: { url: string }[] };
      expect(output.results.map((r) => r.url)).toEqual(web.map((r) => r.url));
    });

    it.each(failures)(
      '%s reaches the model as a short tool error, logged without the query',
      async (failure, reason) => {
        const search = searches.get(provider) as FakeSearchServer;
        search.failNext(failure);
        const { stream, server, toolOutput } = await searchThrough(`fail-${provider}-${failure}`);

        // The chat itself is fine: the model was told why and answered.
        expect(stream.error).toBeUndefined();
        expect(stream.text).toBe('Here is what I found.');
        expect(toolOutput).toMatch(reason(provider));
        expect(toolOutput.length).toBeLessThan(200);
        await server.waitForLog((line) => line.msg === 'web search failed');
        await server.settled();
        const logged = server.logs.filter((line) => line.msg === 'web search failed');
        expect(logged.at(-1)).toMatchObject({ level: 30, provider });
        expect(server.output()).not.toContain(QUERY);
      },
    );

    it.each(endings)(
      'an answer ended by %s reaches the model as a short tool error, logged without the body',
      async (ending, reason) => {
        const search = searches.get(provider) as FakeSearchServer;
        search.results(RESULTS);
        search.endNext(ending);
        const { stream, server, toolOutput } = await searchThrough(`end-${provider}-${ending}`);

        expect(stream.error).toBeUndefined();
        expect(stream.text).toBe('Here is what I found.');
        expect(toolOutput).toMatch(reason);
        expect(toolOutput).not.toContain('example.org');
        expect(toolOutput.length).toBeLessThan(200);
        await server.waitForLog((line) => line.msg === 'web search failed');
        await server.settled();
        expect(server.output()).not.toContain(QUERY);
        expect(server.output()).not.toContain('Bad Gateway');
      },
    );
  });

  /**
   * A provider answering far more than a page of results can be, as fast as Parley reads: it
   * was read whole (gigabytes within a generous time limit, at loopback speed). Read up to
   * 4 MiB, then Parley hangs up and the model is told, as for an unreadable answer.
   */
  describe.each(PROVIDERS)('with %s answering over its bound', (provider) => {
    beforeAll(async () => {
      await runWith({
        ...base,
        ...envFor(searches.get(provider) as FakeSearchServer),
        WEB_SEARCH_TIMEOUT_MS: '60000',
      });
    }, 60_000);

    it('stops reading early; a short tool error, logged as a code without the body', async () => {
      const search = searches.get(provider) as FakeSearchServer;
      search.results(RESULTS);
      search.endNext('oversized');
      const answers = oversizedAnswers.length;
      const { stream, server, toolOutput } = await searchThrough(`oversized-${provider}`);

      expect(stream.error).toBeUndefined();
      expect(stream.text).toBe('Here is what I found.');
      expect(toolOutput).toMatch(/sent an answer too large to read/);
      expect(toolOutput).not.toContain('example.org');
      expect(toolOutput.length).toBeLessThan(200);
      const sent = oversizedAnswers[answers];
      await sent?.done;
      expect(sent?.closedEarly).toBe(true);
      expect(sent?.written).toBeLessThan(OVERSIZED_BYTES / 4);
      const failed = await server.waitForLog((line) => line.msg === 'web search failed');
      expect(failed).toMatchObject({ reason: 'bad_response', code: 'upstream_answer_too_large' });
      await server.settled();
      expect(server.output()).not.toContain(QUERY);
    }, 60_000);
  });

  describe('with none', () => {
    beforeAll(async () => {
      await runWith(base);
    }, 60_000);

    it('offers no web_search', async () => {
      llm.enqueue(reply.text('no search here'));
      const stream = await readChat(
        await (parley as RunningParley).fetch('/chat', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'search the web', user_id: 'nosearch' }),
        }),
      );
      expect(stream.text).toBe('no search here');
      const tools = (llm.chats.at(-1)?.body.tools ?? []).map((t) => t.function.name);
      expect(tools).not.toContain('web_search');
      expect(tools.length).toBeGreaterThan(0);
    });
  });

  describe('with a tool time limit shorter than the search’s own', () => {
    beforeAll(async () => {
      const search = searches.get('searxng') as FakeSearchServer;
      await runWith({
        ...base,
        ...envFor(search),
        WEB_SEARCH_TIMEOUT_MS: '30000',
        TOOL_TIMEOUT_MS: '300',
      });
    }, 60_000);

    it('stops the tool at TOOL_TIMEOUT_MS, tells the model, and the chat carries on', async () => {
      (searches.get('searxng') as FakeSearchServer).failNext('stall');
      const started = Date.now();
      const { stream, toolOutput } = await searchThrough('tool-timeout');
      expect(stream.error).toBeUndefined();
      expect(stream.text).toBe('Here is what I found.');
      expect(toolOutput).toMatch(/timeout|timed out/i);
      expect(Date.now() - started).toBeLessThan(10_000); // not the search's own 30 s
    });
  });
});

describe('web search configuration', () => {
  it.each([
    ['searxng', 'SEARXNG_URL'],
    ['tavily', 'TAVILY_API_KEY'],
    ['brave', 'BRAVE_API_KEY'],
  ])('refuses to start with WEB_SEARCH_PROVIDER=%s and no %s', async (provider, name) => {
    await expect(startParley({ env: { WEB_SEARCH_PROVIDER: provider } })).rejects.toThrow(
      new RegExp(`${name}: required when WEB_SEARCH_PROVIDER=${provider}`),
    );
  });
});

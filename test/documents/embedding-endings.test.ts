import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BODY_ENDINGS } from '../support/body-endings.ts';
import { engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { searchThroughChat } from '../support/search-through-chat.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * An embeddings server (EMBEDDINGS_PROVIDER=openai) whose 200 answer does not arrive whole:
 * cut after the headers, half way or one byte before its end, a complete but half JSON body,
 * a stall half way longer than EMBEDDINGS_TIMEOUT_MS, or a proxy's HTML 502 page. The batch
 * is not taken as embedded: nothing of it is saved, it is asked again after
 * EMBEDDINGS_RETRY_MS, and then the document is embedded whole. The log says so in codes,
 * never with the server's body or the texts. On both engines, each with pgvector.
 */
const TIMEOUT_MS = 500;
const RETRY_MS = 200;

describe.each(ENGINES)(
  'an embeddings answer that does not end whole, on the %s engine',
  (engine) => {
    let llm: FakeLlmServer;
    let setup: Awaited<ReturnType<typeof engineSetup>>;
    let parley: RunningParley;
    let dataDir: string;
    const env = () => ({
      ...setup.env,
      EMBEDDINGS_PROVIDER: 'openai',
      EMBEDDINGS_BASE_URL: llm.url,
      EMBEDDINGS_MODEL: 'fake-embed',
      EMBEDDINGS_MAX_RETRIES: '0',
      EMBEDDINGS_RETRY_MS: String(RETRY_MS),
      EMBEDDINGS_TIMEOUT_MS: String(TIMEOUT_MS),
    });
    const logAfter = (from: number, msg: string, timeoutMs = 10_000) =>
      parley.waitForLog((line) => line.msg === msg && parley.logs.indexOf(line) >= from, timeoutMs);
    /** The outcomes of the embeddings requests that carried `text`. */
    const callsWith = (text: string) =>
      llm.embeddingsCalls.filter((call) => call.input.includes(text));

    beforeAll(async () => {
      setup = await engineSetup(engine);
      ({ llm, dataDir } = setup);
      parley = await startParley({ dataDir, env: env() });
      const ready = await parley.waitForLog((line) => line.msg === 'database ready');
      expect(ready.vector).toBe(true);
    }, 120_000);
    afterEach(() => {
      llm.assertNoUnexpected();
    });
    afterAll(async () => {
      await parley?.stop();
      await setup?.cleanup();
    });

    it.each(BODY_ENDINGS)(
      '%s: the batch is not saved, is asked again, and the document is embedded whole',
      async (ending) => {
        const text = `The ${ending} heron counts pebbles along the quiet estuary.`;
        const from = parley.logs.length;
        const started = Date.now();
        llm.endEmbeddings(ending);
        const answer = await ingest(parley, [file(`${ending}.txt`, text)]);
        expect(answer).toMatchObject({ status: 200, body: { chunks: 1 } });
        await logAfter(from, 'chunks embedded');
        // Asked twice: the broken answer, then the whole one; bounded by the time limit.
        expect(callsWith(text).length).toBe(2);
        expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + RETRY_MS + 5_000);
        await parley.settled();
        const output = parley.output();
        expect(output).not.toContain('heron');
        expect(output).not.toContain('Bad Gateway');
        expect(output).not.toContain('"embedding"');
      },
      30_000,
    );

    it.each(['cut-mid-body', 'truncated-json', 'stall-mid-body', 'html-502'] as const)(
      'a query whose embedding answer is %s is searched by its words, within the time limit',
      async (ending) => {
        await parley.settled();
        llm.endEmbeddings(ending);
        const from = parley.logs.length;
        const started = Date.now();
        const output = await searchThroughChat(parley, llm, 'heron estuary');
        expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 5_000);
        expect(output.retrieval).toBe('lexical');
        expect(output.hits[0]?.text).toContain('heron');
        const warned = await logAfter(from, 'query embedding failed; searching lexically');
        expect(warned.cause).toBeDefined();
        await parley.settled();
        expect(parley.output()).not.toContain('Bad Gateway');
      },
      30_000,
    );

    it('a stall in the dimension probe at start holds neither the backfill nor the stop', async () => {
      await parley.settled();
      await parley.stop();
      // The first request after the start is the probe of the model's dimension.
      llm.endEmbeddings('stall-mid-body');
      parley = await startParley({ dataDir, env: env() });
      const from = parley.logs.length;
      const text = 'The probing otter stacks driftwood beside the cold lagoon.';
      const answer = await ingest(parley, [file('after-probe.txt', text)]);
      expect(answer).toMatchObject({ status: 200, body: { chunks: 1 } });
      await logAfter(from, 'chunks embedded');
      expect(callsWith(text).at(-1)?.outcome).toBe('answered');
      await parley.settled();
    }, 30_000);
  },
);

import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readChat } from '../support/chat-stream.ts';
import { engineSetup } from '../support/engine-setup.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { file, ingest, listedSources } from '../support/ingest-client.ts';
import { searchThroughChat } from '../support/search-through-chat.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Six uploads of 2 MB of text each (about 2,300 chunks and 150,000 postings apiece). Before
 * the fix, each was stored in one transaction holding the embedded engine's one connection
 * 6–10 s: the uploads queued one behind the other for the connection (the last answered
 * after ~67 s here; at 2.7 MB the last ones got 503 "database unavailable" after the pool's
 * 60 s wait) and a chat sent meanwhile waited for all of them.
 */
const UPLOADS = 6;
const BYTES = 2_000_000;
/** A word found in one upload only, so that a search for it names that upload. */
const MARKERS = ['alderwood', 'bristlecone', 'cedarbrook', 'dunmore', 'elmstead', 'fernhollow'];
/** How long a chat may take while the uploads are stored: seconds, not the uploads' minute. */
const CHAT_MAX_MS = 15_000;

/** SciFact abstracts as plain-text documents, upload i starting at the i-th sixth (wrapping). */
function corpusSlices(): string[] {
  const abstracts = readFileSync('../shared/data/scifact/corpus.jsonl', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { title: string; text: string });
  return MARKERS.slice(0, UPLOADS).map((marker, i) => {
    let text = `Reading list ${marker}.\n\n`;
    for (let at = Math.floor((i * abstracts.length) / UPLOADS); text.length < BYTES; at++) {
      const { title, text: body } = abstracts[at % abstracts.length] as (typeof abstracts)[0];
      text += `${title}\n\n${body}\n\n`;
    }
    return text;
  });
}

describe.each(ENGINES)(
  'concurrent large uploads on the %s engine',
  { timeout: 180_000 },
  (engine) => {
    let setup: Awaited<ReturnType<typeof engineSetup>>;
    let parley: RunningParley;

    beforeAll(async () => {
      // Embeddings on, as a user runs Parley: the background job embeds while uploads are stored.
      setup = await engineSetup(engine, {
        EMBEDDINGS_PROVIDER: 'openai',
        EMBEDDINGS_MODEL: 'fake-embedder',
        EMBEDDINGS_MAX_RETRIES: '0',
      });
      parley = await startParley({
        dataDir: setup.dataDir,
        env: { ...setup.env, EMBEDDINGS_BASE_URL: setup.llm.url },
        startTimeoutMs: 120_000,
      });
    }, 150_000);
    afterAll(async () => {
      await parley?.stop();
      await setup?.cleanup();
    });

    it('stores every upload, searchable, and answers another user meanwhile', async () => {
      const slices = corpusSlices();
      const uploads = slices.map((text, i) => ingest(parley, [file(`scifact-${i}.txt`, text)]));

      // Once one upload is stored, the others are being stored: bob chats now.
      await waitFor(async () => (await listedSources(parley)).length > 0, 120_000);
      setup.llm.enqueue(reply.text('Still here.'));
      const chatStarted = Date.now();
      const chat = await readChat(
        await parley.fetch('/chat', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ message: 'Are you there?', user_id: 'bob' }),
        }),
      );
      const chatMs = Date.now() - chatStarted;
      expect(chat.error).toBeUndefined();
      expect(chat.text).toBe('Still here.');

      const answers = await Promise.all(uploads);
      expect(answers.map((answer) => answer.status)).toEqual(slices.map(() => 200));
      expect((await listedSources(parley)).sort()).toEqual(
        slices.map((_, i) => `scifact-${i}.txt`),
      );
      for (const [i, marker] of MARKERS.slice(0, UPLOADS).entries()) {
        const found = await searchThroughChat(parley, setup.llm, `${marker} reading list`, 'carol');
        expect(found.hits[0]?.source).toBe(`scifact-${i}.txt`);
      }
      expect(chatMs).toBeLessThan(CHAT_MAX_MS);
    });
  },
);

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { VECTOR_SETUPS } from '../support/engines.ts';
import { type Listening, listen } from '../support/fake-http.ts';
import type { FakeLlmServer } from '../support/fake-llm-server.ts';
import { searchThroughChat } from '../support/search-through-chat.ts';
import { seed } from '../support/seed.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';
import { tinyEmbeddingModel } from '../support/tiny-embedding-model.ts';

const MODEL = 'parley-tests/tiny-embedder';

/**
 * A model hub serving the tiny generated model the way transformers.js fetches models
 * (`/<model>/resolve/main/<file>`), unreachable (404 for everything) until `online` is set.
 */
async function startModelHub() {
  const files = tinyEmbeddingModel();
  const hub = {
    online: false,
    fetched: [] as string[],
    server: undefined as Listening | undefined,
  };
  hub.server = await listen(
    async (req, res) => {
      const path = new URL(req.url ?? '/', 'http://hub').pathname;
      const prefix = `/${MODEL}/resolve/main/`;
      const file = path.startsWith(prefix) ? files.get(path.slice(prefix.length)) : undefined;
      if (!hub.online || !file) {
        res.writeHead(404).end();
        return;
      }
      hub.fetched.push(path.slice(prefix.length));
      res
        .writeHead(200, { 'content-length': file.length })
        .end(req.method === 'HEAD' ? undefined : file);
    },
    () => {},
  );
  return hub;
}

describe.each(VECTOR_SETUPS)('the local embedding model on $name', (setup) => {
  let llm: FakeLlmServer;
  let hub: Awaited<ReturnType<typeof startModelHub>>;
  let harness: EngineSetup;
  let dataDir: string;
  let parley: RunningParley;

  const search = (query: string) => searchThroughChat(parley, llm, query, `u${Math.random()}`);
  const warnings = () => parley.logs.filter((line) => /cannot be loaded/.test(line.msg));

  beforeAll(async () => {
    harness = await engineSetup(setup.engine, {}, {}, { pgvector: setup.pgvector });
    ({ llm, dataDir } = harness);
    hub = await startModelHub();
    await seed(
      { dataDir, databaseUrl: harness.env.DATABASE_URL },
      {
        documents: [
          { source: 'seoul.txt', chunks: ['the seoul market is korean food'] },
          { source: 'busan.txt', chunks: ['the busan beach'] },
        ],
      },
    );
    parley = await startParley({
      dataDir,
      env: {
        ...harness.env,
        EMBEDDINGS_MODEL: MODEL,
        EMBEDDINGS_MODEL_HOST: hub.server?.origin,
        EMBEDDINGS_RETRY_MS: '500',
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
    await hub?.server?.close();
    await harness?.cleanup();
  });

  if (setup.pgvector) {
    it('serves lexical search with one warning while the model cannot be had, then downloads it and embeds what was stored', async () => {
      await expect.poll(() => warnings().length, { timeout: 20_000 }).toBe(1);
      const offline = await search('seoul market');
      expect(offline.retrieval).toBe('lexical');
      expect(offline.hits[0]?.source).toBe('seoul.txt');

      hub.online = true;
      await expect
        .poll(() => parley.logs.some((line) => line.msg === 'chunks embedded'), { timeout: 30_000 })
        .toBe(true);
      expect(warnings()).toHaveLength(1);
      expect(parley.logs.some((line) => line.msg === 'downloading the embedding model')).toBe(true);
      expect(existsSync(join(dataDir, 'models', MODEL, 'onnx', 'model_quantized.onnx'))).toBe(true);

      const online = await search('seoul market');
      expect(online.retrieval).toBe('hybrid');
      expect(online.hits[0]?.source).toBe('seoul.txt');
    });
  } else {
    it('never loads the model without pgvector: search is lexical and nothing is fetched', async () => {
      hub.online = true;
      const result = await search('seoul market');
      expect(result.retrieval).toBe('lexical');
      expect(result.hits[0]?.source).toBe('seoul.txt');
      expect(hub.fetched).toEqual([]);
    });
  }
});

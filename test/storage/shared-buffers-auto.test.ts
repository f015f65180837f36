import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { backfillEnv } from '../support/backfill-env.ts';
import { type EngineSetup, engineSetup } from '../support/engine-setup.ts';
import { file, ingest } from '../support/ingest-client.ts';
import { searchThroughChat } from '../support/search-through-chat.ts';
import { type RunningParley, startParley } from '../support/start-parley.ts';

/**
 * EMBEDDED_DB_SHARED_BUFFERS=auto (the default) on the embedded engine: a store whose vector
 * index outgrows 16MB of shared buffers is opened, at its next start, with buffers that hold
 * it; a small store keeps 16MB; a size set by the operator is used as given. (The server
 * engine's shared_buffers is its PostgreSQL server's own setting: nothing to test there.)
 *
 * 2,000-dimension vectors take a page each in the HNSW index, so ~1,900 chunks make it ~16 MB
 * (about what 8,000 chunks of a 384-dimension model would).
 */
const DIMENSION = 2000;
/** Two to a chunk of backfillEnv's CHUNK_MAX_TOKENS 32. */
const SENTENCES = 3_900;
const MB = 1024 * 1024;

interface DatabaseReady {
  sharedBuffers?: string;
  vectorIndexBytes?: number;
}

describe('the embedded engine’s shared buffers, sized to its vector index', () => {
  let setup: EngineSetup;
  let parley: RunningParley | undefined;

  const start = async (env: Record<string, string> = {}) => {
    const started = await startParley({
      dataDir: setup.dataDir,
      env: { ...setup.env, ...backfillEnv(setup.llm.url, 'fake-embed', 256), ...env },
    });
    parley = started;
    const ready = await started.waitForLog((line) => line.msg === 'database ready');
    return { ready: ready as DatabaseReady, parley: started };
  };
  const stop = async () => {
    expect(await parley?.stop()).toBe(0);
    parley = undefined;
  };

  beforeAll(async () => {
    setup = await engineSetup('embedded', {}, { embeddingDimension: DIMENSION });
  });
  afterEach(async () => {
    await parley?.stop();
    parley = undefined;
  });
  afterAll(async () => {
    await setup?.cleanup();
  });

  it('keeps 16MB for a store without vectors', async () => {
    const { ready } = await start();
    expect(ready.sharedBuffers).toBe('16MB');
    expect(ready.vectorIndexBytes).toBe(0);
    await stop();
  });

  it('opens a store whose vector index outgrew 16MB with buffers that hold it, and searches it', async () => {
    const first = await start();
    // One sentence a chunk, each with its own words.
    const text = Array.from(
      { length: SENTENCES },
      (_, i) => `Ledger entry ${i} records crate ${i * 7 + 3} shipped to dock ${i % 97}.`,
    ).join('\n\n');
    const answer = await ingest(first.parley, [file('ledger.txt', text)]);
    expect(answer.status).toBe(200);
    const chunks = answer.body.chunks ?? 0;
    expect(chunks).toBeGreaterThan(1_800);
    const embedded = () =>
      first.parley.logs
        .filter((line) => line.msg === 'chunks embedded')
        .reduce((sum, line) => sum + Number(line.embedded), 0);
    await first.parley.waitForLog(() => embedded() >= chunks, 240_000);
    await stop();

    const { ready, parley: again } = await start();
    expect(ready.vectorIndexBytes).toBeGreaterThan(13 * MB);
    const buffers = Number(/^(\d+)MB$/.exec(ready.sharedBuffers ?? '')?.[1]);
    expect(buffers * MB).toBeGreaterThanOrEqual(ready.vectorIndexBytes ?? Infinity);
    const output = await searchThroughChat(again, setup.llm, 'crate shipped dock');
    expect(output.retrieval).toBe('hybrid');
    expect(output.hits[0]?.source).toBe('ledger.txt');
    await stop();
  }, 300_000);

  it('uses a size the operator set as given', async () => {
    const { ready } = await start({ EMBEDDED_DB_SHARED_BUFFERS: '24MB' });
    expect(ready.sharedBuffers).toBe('24MB');
    expect(ready.vectorIndexBytes).toBeUndefined();
    await stop();
  });
});

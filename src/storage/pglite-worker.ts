import { renameSync, rmSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { readSeed } from './embedded-seed.ts';
import { PgliteSessionServer } from './pglite-session-server.ts';

/**
 * Runs PGlite on its own thread and serves it over the PostgreSQL wire protocol on a private
 * Unix socket. PGlite executes queries on the calling thread, so running it here keeps slow
 * queries and ingestion off the main event loop, and it lets the application talk to both
 * engines with the same `pg` driver. PGlite has one session: connections take turns on it
 * (see pglite-session-server.ts), and the main thread's pool holds one at a time.
 */

export interface PgliteWorkerData {
  dataDir: string;
  socketPath: string;
  /** Postgres `shared_buffers`, e.g. `16MB`. */
  sharedBuffers: string;
  /** Create the (new) database from the shipped seed instead of running initdb. */
  fromSeed?: boolean;
}

export type PgliteWorkerMessage =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  /** PGlite stopped working while serving; it answers no more connections. */
  | { type: 'engine-failed'; message: string };

const { dataDir, socketPath, sharedBuffers, fromSeed } = workerData as PgliteWorkerData;
const port = parentPort;
if (!port) throw new Error('pglite-worker must run as a worker thread');
/**
 * Makes the database from the shipped seed beside the data directory and moves it into place
 * once complete, so a process killed meanwhile leaves nothing that looks like a database.
 * On this thread, not a throw-away one: loading a seed leaves little behind (~10 MB), while
 * every thread that runs PGlite keeps its own compiled WASM and allocator arenas.
 */
async function createFromSeed(options: PGliteOptions): Promise<void> {
  const seed = await readSeed();
  if (!seed) throw new Error('the embedded database seed is missing');
  const creating = `${dataDir}.creating`;
  rmSync(creating, { recursive: true, force: true });
  const seeded = await PGlite.create(creating, { ...options, loadDataDir: new Blob([seed]) });
  await seeded.close();
  renameSync(creating, dataDir);
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

try {
  const options = {
    extensions: { vector },
    // Postgres' default 128MB of shared buffers lives in PGlite's WASM memory and is never
    // given back; 16MB cut the process's resident memory by ~125MB (the OS still caches
    // the data files).
    postgresqlconf: [`shared_buffers = ${sharedBuffers}`],
  };
  if (fromSeed) await createFromSeed(options);
  const db = await PGlite.create(dataDir, options);
  const server = new PgliteSessionServer(db, {
    onEngineFailure: (error) =>
      port.postMessage({
        type: 'engine-failed',
        message: describe(error),
      } satisfies PgliteWorkerMessage),
  });
  await server.listen(socketPath);

  port.on('message', async (message: unknown) => {
    if (message !== 'close') return;
    await server.close();
    await db.close(); // flushes and closes the data directory cleanly
    port.close();
  });
  port.postMessage({ type: 'ready' } satisfies PgliteWorkerMessage);
} catch (error) {
  port.postMessage({ type: 'failed', message: describe(error) } satisfies PgliteWorkerMessage);
}

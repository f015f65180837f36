import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/**
 * Runs PGlite on its own thread and serves it over the PostgreSQL wire protocol on a private
 * Unix socket. PGlite executes queries on the calling thread, so running it here keeps slow
 * queries and ingestion off the main event loop, and it lets the application talk to both
 * engines with the same `pg` driver.
 *
 * One connection only: the socket server's multiplexer interleaves extended-protocol messages
 * of different connections, which is unsafe; the main thread's pool queues instead.
 */

export interface PgliteWorkerData {
  dataDir: string;
  socketPath: string;
  /** Postgres `shared_buffers`, e.g. `16MB`. */
  sharedBuffers: string;
}

export type PgliteWorkerMessage = { type: 'ready' } | { type: 'failed'; message: string };

const { dataDir, socketPath, sharedBuffers } = workerData as PgliteWorkerData;
const port = parentPort;
if (!port) throw new Error('pglite-worker must run as a worker thread');

try {
  const db = await PGlite.create(dataDir, {
    extensions: { vector },
    // Postgres' default 128MB of shared buffers lives in PGlite's WASM memory and is never
    // given back; 16MB cut the process's resident memory by ~125MB (the OS still caches
    // the data files).
    postgresqlconf: [`shared_buffers = ${sharedBuffers}`],
  });
  const server = new PGLiteSocketServer({ db, path: socketPath, maxConnections: 1 });
  await server.start();

  port.on('message', async (message: unknown) => {
    if (message !== 'close') return;
    await server.stop();
    await db.close(); // flushes and closes the data directory cleanly
    port.close();
  });
  port.postMessage({ type: 'ready' } satisfies PgliteWorkerMessage);
} catch (error) {
  port.postMessage({
    type: 'failed',
    message: error instanceof Error ? error.message : String(error),
  } satisfies PgliteWorkerMessage);
}

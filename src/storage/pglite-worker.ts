import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { copyDataDir } from './copy-data-dir.ts';
import { pgliteOptions } from './pglite-options.ts';
import { PgliteSessionServer } from './pglite-session-server.ts';
import { VECTOR_INDEX_BYTES_SQL } from './shared-buffers.ts';

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
  /** Whether `ready` says how large the vector indexes are (for EMBEDDED_DB_SHARED_BUFFERS=auto). */
  measureVectorIndexes?: boolean;
}

/** Asks the worker to copy the data directory to `path` (new, on the same disk) for a backup. */
export interface BackupRequest {
  type: 'backup';
  id: number;
  path: string;
}

export type PgliteWorkerMessage =
  /** `vectorIndexBytes`: with `measureVectorIndexes`, the vector indexes' size on disk. */
  | { type: 'ready'; vectorIndexBytes?: number }
  /** `pausedMs`: how long the database answered nothing while its files were copied. */
  | { type: 'backup-done'; id: number; pausedMs: number }
  | { type: 'backup-failed'; id: number; message: string }
  | { type: 'failed'; message: string }
  /** PGlite stopped working while serving; it answers no more connections. */
  | { type: 'engine-failed'; message: string };

const { dataDir, socketPath, sharedBuffers, measureVectorIndexes } = workerData as PgliteWorkerData;
const port = parentPort;
if (!port) throw new Error('pglite-worker must run as a worker thread');
const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

try {
  const db = await PGlite.create(dataDir, pgliteOptions(sharedBuffers));
  const vectorIndexBytes = measureVectorIndexes
    ? (await db.query<{ bytes: number }>(VECTOR_INDEX_BYTES_SQL)).rows[0]?.bytes
    : undefined;
  const server = new PgliteSessionServer(db, {
    onEngineFailure: (error) =>
      port.postMessage({
        type: 'engine-failed',
        message: describe(error),
      } satisfies PgliteWorkerMessage),
  });
  await server.listen(socketPath);

  port.on('message', async (message: unknown) => {
    if (isBackupRequest(message)) {
      port.postMessage(await backup(db, message));
      return;
    }
    if (message !== 'close') return;
    await server.close();
    await db.close(); // flushes and closes the data directory cleanly
    port.close();
  });
  port.postMessage({ type: 'ready', vectorIndexBytes } satisfies PgliteWorkerMessage);
} catch (error) {
  port.postMessage({ type: 'failed', message: describe(error) } satisfies PgliteWorkerMessage);
}

function isBackupRequest(message: unknown): message is BackupRequest {
  return (message as BackupRequest | null)?.type === 'backup';
}

/**
 * A live backup's copy: the data directory's files are copied while PGlite's session is held
 * (the lock every protocol message of pglite-session-server.ts takes), so no statement runs
 * during the copy. PGlite writes straight through to these files (its NodeFS has nothing to
 * sync), so what is copied is what a crash at that moment would leave: every committed
 * transaction is in the write-ahead log, and opening the copy replays it (a transaction still
 * open is rolled back). The archive is made from the copy afterwards, with the database free.
 */
async function backup(
  db: PGlite,
  request: BackupRequest,
): Promise<Extract<PgliteWorkerMessage, { id: number }>> {
  try {
    const pausedMs = await db.runExclusive(async () => {
      const started = performance.now();
      copyDataDir(dataDir, request.path);
      return Math.round(performance.now() - started);
    });
    return { type: 'backup-done', id: request.id, pausedMs };
  } catch (error) {
    return { type: 'backup-failed', id: request.id, message: describe(error) };
  }
}

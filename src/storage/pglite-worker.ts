import { writeFile } from 'node:fs/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { pgliteOptions } from './pglite-options.ts';
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
}

/** Asks the worker for a backup of the data directory, written as a gzipped tar to `path`. */
export interface BackupRequest {
  type: 'backup';
  id: number;
  path: string;
}

export type PgliteWorkerMessage =
  | { type: 'ready' }
  | { type: 'backup-done'; id: number; bytes: number }
  | { type: 'backup-failed'; id: number; message: string }
  | { type: 'failed'; message: string }
  /** PGlite stopped working while serving; it answers no more connections. */
  | { type: 'engine-failed'; message: string };

const { dataDir, socketPath, sharedBuffers } = workerData as PgliteWorkerData;
const port = parentPort;
if (!port) throw new Error('pglite-worker must run as a worker thread');
const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

try {
  const db = await PGlite.create(dataDir, pgliteOptions(sharedBuffers));
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
  port.postMessage({ type: 'ready' } satisfies PgliteWorkerMessage);
} catch (error) {
  port.postMessage({ type: 'failed', message: describe(error) } satisfies PgliteWorkerMessage);
}

function isBackupRequest(message: unknown): message is BackupRequest {
  return (message as BackupRequest | null)?.type === 'backup';
}

/**
 * A live backup: PGlite copies its data directory's files in one synchronous pass, between two
 * protocol messages of the session it serves, so no statement runs during the copy. What it
 * copies is what a crash at that moment would leave: every committed transaction is in the
 * write-ahead log, and opening the copy replays it (a transaction still open is rolled back).
 */
async function backup(
  db: PGlite,
  request: BackupRequest,
): Promise<Extract<PgliteWorkerMessage, { id: number }>> {
  try {
    const archive = await db.dumpDataDir('gzip');
    const bytes = new Uint8Array(await archive.arrayBuffer());
    await writeFile(request.path, bytes, { mode: 0o600 });
    return { type: 'backup-done', id: request.id, bytes: bytes.byteLength };
  } catch (error) {
    return { type: 'backup-failed', id: request.id, message: describe(error) };
  }
}

import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { lockDataDir } from './data-dir-lock.ts';
import { createDataDirFromSeed, hasSeed } from './embedded-seed.ts';
import type { BackupRequest, PgliteWorkerData, PgliteWorkerMessage } from './pglite-worker.ts';
import { AUTO, AUTO_FLOOR, autoSharedBuffers } from './shared-buffers.ts';

/** The port number only names the socket file (`.s.PGSQL.<port>`), as libpq does. */
const SOCKET_PORT = 5432;

export interface EmbeddedEngine {
  /** `pg` connection settings for the private socket. */
  connection: { host: string; port: number; user: string; database: string };
  /** Resolves if the engine thread stops on its own (it should not). */
  exited: Promise<number>;
  /** Resolves with the reason if PGlite itself stops working (it then serves nothing more). */
  failed: Promise<string>;
  /**
   * Copies the data directory to `path` (new, on the same disk), consistent, while the engine
   * serves (see pglite-worker.ts); resolves with how long the engine was held, in ms.
   */
  copyDataDir(path: string): Promise<number>;
  stop(): Promise<void>;
  /** The `shared_buffers` it runs with (EMBEDDED_DB_SHARED_BUFFERS, or what `auto` chose). */
  sharedBuffers: string;
  /** With `auto`: the vector indexes' size on disk at start, in bytes. */
  vectorIndexBytes?: number;
}

/**
 * Starts PGlite (with pgvector) on a worker thread under `dataDir/pg`, holding the data
 * directory lock for as long as it runs. The socket lives in a fresh 0700 temp directory so
 * no other local user can connect to the unauthenticated embedded server.
 */
export async function startEmbeddedEngine(
  dataDir: string,
  sharedBuffers: string,
): Promise<EmbeddedEngine> {
  const root = resolve(dataDir);
  mkdirSync(root, { recursive: true });
  const lock = await lockDataDir(root);
  const socketDir = mkdtempSync(join(tmpdir(), 'parley-pg-'));
  const cleanup = async () => {
    rmSync(socketDir, { recursive: true, force: true });
    await lock.release();
  };
  const data: PgliteWorkerData = {
    dataDir: join(root, 'pg'),
    socketPath: join(socketDir, `.s.PGSQL.${SOCKET_PORT}`),
    sharedBuffers,
  };

  try {
    if (!existsSync(join(data.dataDir, 'PG_VERSION'))) {
      // Without a seed for the installed PGlite, initdb: in a worker that exits once it is
      // done, since initdb leaves ~450 MB of WASM memory behind that PGlite never returns.
      if (hasSeed()) await createDataDirFromSeed(data.dataDir);
      else await stopWorker((await startWorker(data)).worker);
    }
    const auto = sharedBuffers === AUTO;
    let { worker, vectorIndexBytes } = await startWorker(
      auto ? { ...data, sharedBuffers: AUTO_FLOOR, measureVectorIndexes: true } : data,
    );
    let running = auto ? AUTO_FLOOR : sharedBuffers;
    if (auto && vectorIndexBytes !== undefined) {
      // Postgres sets its shared buffers once, at start: the engine is started again with
      // what its vector indexes need. Only a store with more than ~13 MB of them pays this.
      const sized = autoSharedBuffers(vectorIndexBytes);
      if (sized !== running) {
        await stopWorker(worker);
        ({ worker } = await startWorker({ ...data, sharedBuffers: sized }));
        running = sized;
      }
    }
    const exited = once(worker, 'exit').then(([code]) => code as number);
    const failed = new Promise<string>((resolve) => {
      worker.on('message', (message: PgliteWorkerMessage) => {
        if (message.type === 'engine-failed') resolve(message.message);
      });
    });
    let backups = 0;
    return {
      connection: { host: socketDir, port: SOCKET_PORT, user: 'postgres', database: 'postgres' },
      sharedBuffers: running,
      ...(vectorIndexBytes === undefined ? {} : { vectorIndexBytes }),
      exited,
      failed,
      copyDataDir(path) {
        const id = ++backups;
        const done = new Promise<number>((resolve, reject) => {
          const onMessage = (message: PgliteWorkerMessage) => {
            if (!('id' in message) || message.id !== id) return;
            worker.off('message', onMessage);
            if (message.type === 'backup-done') resolve(message.pausedMs);
            else reject(new Error(message.message));
          };
          worker.on('message', onMessage);
        });
        worker.postMessage({ type: 'backup', id, path } satisfies BackupRequest);
        return done;
      },
      async stop() {
        await stopWorker(worker);
        await cleanup();
      },
    };
  } catch (error) {
    await cleanup();
    throw new Error(`The embedded database in ${root} could not start: ${errorMessage(error)}`, {
      cause: error,
    });
  }
}

async function startWorker(
  data: PgliteWorkerData,
): Promise<{ worker: Worker; vectorIndexBytes?: number }> {
  const worker = new Worker(new URL('./pglite-worker.ts', import.meta.url), {
    workerData: data,
    // The socket server's per-message buffers let the young generation grow to its default
    // maximum under load, and V8 keeps it: 12MB took ~87MB off the process after 5,000
    // chats with no loss of throughput (bench/RESULTS.md).
    resourceLimits: { maxYoungGenerationSizeMb: 12 },
  });
  const [first] = (await once(worker, 'message')) as [PgliteWorkerMessage]; // rejects on 'error'
  if (first.type === 'failed') {
    await worker.terminate();
    throw new Error(first.message);
  }
  return first.type === 'ready' && first.vectorIndexBytes !== undefined
    ? { worker, vectorIndexBytes: first.vectorIndexBytes }
    : { worker };
}

async function stopWorker(worker: Worker): Promise<void> {
  const exited = once(worker, 'exit');
  worker.postMessage('close');
  const timeout = setTimeout(() => void worker.terminate(), 10_000);
  await exited;
  clearTimeout(timeout);
}

const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error));

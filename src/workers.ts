import cluster, { type Worker } from 'node:cluster';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { CANNOT_START_EXIT_CODE } from './startup-failure.ts';

export interface WorkerSupervisorOptions {
  /** Processes to keep running. */
  count: number;
  logger: Logger;
  /** SHUTDOWN_GRACE_MS: how long a worker's open streams may finish after SIGTERM. */
  graceMs: number;
  /** Where each worker keeps its uploads in flight (`<dir>/worker-<id>`); removed when it exits. */
  uploadsDir: string;
  /** Called once every worker has stopped (after SIGTERM or SIGINT), with the exit code. */
  onStopped?: (code: number) => void;
}

/** A worker that dies sooner than this after it was started counts as a crash loop. */
const STABLE_AFTER_MS = 30_000;
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;
/** After the grace period, how long the primary waits for workers before it kills them. */
const STOP_MARGIN_MS = 15_000;

/**
 * How long to wait before replacing a dead worker: at once after one that had been running
 * for a while, then 1 s, 2 s, 4 s … up to 30 s while workers keep dying young (a database
 * that is down, a bad deployment), so a crash loop does not spin the CPU or flood the log.
 */
export function restartDelayMs(youngDeathsInARow: number): number {
  if (youngDeathsInARow <= 0) return 0;
  return Math.min(FIRST_RETRY_MS * 2 ** (youngDeathsInARow - 1), MAX_RETRY_MS);
}

/** The uploads directory of the current process: its own one when it is a cluster worker. */
export function uploadsDirOf(base: string): string {
  return cluster.worker ? join(base, `worker-${cluster.worker.id}`) : base;
}

/**
 * PARLEY_WORKERS > 1: the primary process serves nothing itself. It starts `count` workers
 * (each one is the whole server, as `npm start` runs it; node:cluster shares the listening
 * port among them), replaces one that dies, and on SIGTERM or SIGINT passes the signal on
 * and waits until every worker has drained its streams and closed its database pool.
 */
export function superviseWorkers(options: WorkerSupervisorOptions): void {
  const { count, logger, graceMs, uploadsDir } = options;
  const startedAt = new Map<Worker, number>();
  let youngDeaths = 0;
  let stopping = false;
  let failed = false;
  let sentSignal: NodeJS.Signals | undefined;

  const fork = () => {
    const worker = cluster.fork();
    startedAt.set(worker, Date.now());
    // A message to a worker that has just died (a /metrics scrape asks every worker) fails
    // before the primary has read the end of its channel: cluster emits it as 'error' on the
    // worker, and unheard it ended the primary, and every worker with it. The worker's exit
    // follows and is handled below.
    worker.on('error', (error) =>
      logger.warn(
        { err: error, code: 'worker_message_failed', worker: worker.id },
        'a message to a worker was not delivered',
      ),
    );
  };

  cluster.on('exit', (worker, code, signal) => {
    const lived = Date.now() - (startedAt.get(worker) ?? Date.now());
    startedAt.delete(worker);
    // Unheard, a removal that failed (a disk turned read-only) would end the primary and every
    // worker with it. What is left is removed at the next start (launch.ts).
    rm(join(uploadsDir, `worker-${worker.id}`), { recursive: true, force: true }).catch(
      (error: unknown) =>
        logger.warn(
          { err: error, code: 'worker_uploads_not_removed', worker: worker.id },
          "a dead worker's uploads folder could not be removed; the next start removes it",
        ),
    );
    if (stopping) {
      // One still starting has no handler yet and dies of the signal itself: nothing was lost.
      if (code !== 0 && signal !== sentSignal) failed = true;
      logger.info(
        { worker: worker.id, workerPid: worker.process.pid, code, signal },
        'worker stopped',
      );
      if (startedAt.size === 0) finish();
      return;
    }
    if (code === CANNOT_START_EXIT_CODE) {
      // It said why on stderr (a port in use, a database that does not exist…): every
      // replacement would say the same, forever, while nothing serves. Stop, as one process does.
      logger.error(
        { worker: worker.id, workerPid: worker.process.pid, code },
        'a worker cannot start, and none would: stopping (see the reason above)',
      );
      failed = true;
      stop('SIGTERM');
      return;
    }
    youngDeaths = lived < STABLE_AFTER_MS ? youngDeaths + 1 : 0;
    const restartInMs = restartDelayMs(youngDeaths);
    logger.error(
      {
        worker: worker.id,
        workerPid: worker.process.pid,
        code,
        signal,
        livedMs: lived,
        restartInMs,
      },
      'worker exited unexpectedly; starting another',
    );
    setTimeout(() => {
      if (!stopping) fork();
    }, restartInMs);
  });

  let forceTimer: NodeJS.Timeout | undefined;
  const finish = () => {
    clearTimeout(forceTimer);
    logger.info({ clean: !failed }, 'all workers stopped');
    options.onStopped?.(failed ? 1 : 0);
  };
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    sentSignal = signal;
    logger.info({ signal, workers: startedAt.size }, 'stopping workers');
    if (startedAt.size === 0) return finish();
    // Each worker shuts down as a single process does: stop accepting, drain, close.
    for (const worker of startedAt.keys()) worker.process.kill(signal);
    forceTimer = setTimeout(() => {
      failed = true;
      for (const worker of startedAt.keys()) {
        logger.error(
          { worker: worker.id, workerPid: worker.process.pid },
          'worker did not stop; killed',
        );
        worker.process.kill('SIGKILL');
      }
    }, graceMs + STOP_MARGIN_MS);
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));

  logger.info({ workers: count }, 'starting workers');
  for (let i = 0; i < count; i++) fork();
}

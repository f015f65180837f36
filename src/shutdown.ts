import type { Logger } from 'pino';

/**
 * After the grace period, how long the stop may still take before the process exits anyway:
 * open connections are cut a second after the grace period, and a job told to stop has
 * RETURN_MS (job-runner.ts) to return; closing the database follows. A PostgreSQL server that
 * does not answer is given up on half a second after RETURN_MS, its connections cut half a
 * second later (main.ts, database.ts).
 */
export const EXIT_MARGIN_MS = 5_000;

/** Steps of the stop that run at once, by name (the name is what a log line says held it). */
export type StopStage = Record<string, () => Promise<void> | void>;

export interface StopPlan {
  graceMs: number;
  logger: Logger;
  /** The grace period is over: open streams and jobs under way are told to stop. */
  endGrace(): void;
  /** Run in order, each stage's steps at once. A step that throws ends the stop (exit 1). */
  stages: StopStage[];
  /** After the stop, whatever its outcome. */
  finally?(): void;
}

/**
 * What SIGTERM and SIGINT do (README, "Stopping"). The first starts the stop: each stage in
 * turn, the first one draining (streams, jobs under way) until `graceMs` has passed, then told
 * to stop (`endGrace`). The process exits once nothing is left to do, as soon as the last
 * stream and job are done. A second signal ends the grace period at once: streams and jobs
 * are stopped, the database still closed cleanly.
 *
 * Answers `stopping`, aborted at the first signal: start-up that is still under way then
 * starts nothing more.
 *
 * Last resort: a process still running `graceMs` + EXIT_MARGIN_MS after the first signal (a
 * step that does not return, a handle left open) says what held it and exits 1. The timer is
 * unref'd: it never keeps the process alive itself.
 */
export function stopOnSignals(plan: StopPlan): { stopping: AbortSignal } {
  const { graceMs, logger } = plan;
  const stopping = new AbortController();
  let graceOver = false;
  let graceTimer: NodeJS.Timeout | undefined;
  /** The steps under way, named in the last-resort log line. */
  const unfinished = new Set<string>();

  const endGrace = () => {
    if (graceOver) return;
    graceOver = true;
    clearTimeout(graceTimer);
    plan.endGrace();
  };

  const stop = async () => {
    try {
      for (const stage of plan.stages) {
        const failure = await runStage(stage, unfinished);
        if (failure) {
          logger.error({ err: failure.cause, step: failure.step }, 'unclean shutdown');
          process.exitCode = 1;
          return;
        }
      }
      logger.info('stopped');
      process.exitCode = 0;
    } finally {
      clearTimeout(graceTimer);
      plan.finally?.();
    }
  };

  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping.signal.aborted) {
      logger.warn({ signal }, 'second signal: the grace period ends now');
      endGrace();
      return;
    }
    stopping.abort();
    logger.info({ signal, graceMs }, 'shutting down');
    graceTimer = setTimeout(endGrace, graceMs);
    graceTimer.unref();
    const deadline = setTimeout(() => {
      logger.error(
        {
          afterMs: graceMs + EXIT_MARGIN_MS,
          unfinished: [...unfinished],
          // Handle types only (`TCPSocketWrap`, `Timeout`): what kept the event loop alive.
          resources: process.getActiveResourcesInfo(),
        },
        'shutdown did not finish in time: exiting now',
      );
      process.exit(1);
    }, graceMs + EXIT_MARGIN_MS);
    deadline.unref();
    void stop();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return { stopping: stopping.signal };
}

interface StepFailure {
  step: string;
  cause: unknown;
}

/** Runs a stage's steps at once; once all are over, the first that failed, if any. */
async function runStage(
  stage: StopStage,
  unfinished: Set<string>,
): Promise<StepFailure | undefined> {
  const failures: StepFailure[] = [];
  await Promise.all(
    Object.entries(stage).map(async ([step, run]) => {
      unfinished.add(step);
      try {
        await run();
      } catch (cause) {
        failures.push({ step, cause });
      } finally {
        unfinished.delete(step);
      }
    }),
  );
  return failures[0];
}

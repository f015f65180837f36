import type { Logger } from 'pino';
import { errorKindOf } from '../background/error-kind.ts';
import type { JobFailure, JobKindDefinition, JobPolicy } from '../background/job-kind.ts';
import { isUuid } from '../is-uuid.ts';
import { markdownLiteral } from '../markdown-literal.ts';
import type { Clock } from '../reminders/clock.ts';
import type { AutomationRepository, ClaimedRun } from '../storage/automation-repository.ts';
import { type AutomationRunDependencies, type RunResult, runAutomation } from './run-automation.ts';
import { latestOccurrence, MAX_LATENESS_MS, nextOccurrence } from './schedule.ts';

/** Failed runs in a row that pause an automation. */
export const FAILURES_TO_PAUSE = 3;

/**
 * A run's row is its claim, like a reminder notice's, on the same clock (which a test moves).
 * A run may wait for the user's own chat (which ends within ANSWER_MAX_SECONDS), take as long
 * as a chat (ANSWER_MAX_SECONDS, from its turn) and then deliver (a minute): that is its
 * budget. The claim, twice a chat and its delivery, outlasts the budget by a minute, so it is
 * never taken over while its runner still works, and a dead runner's run is taken over no
 * later than before runs waited for their turn. A failed run is not tried again (it is
 * recorded, and counts towards the pause): the next occurrence is the next try.
 */
export const automationPolicy = (answerMaxMs: number): Omit<JobPolicy, 'intervalMs'> => ({
  leaseSeconds: Math.ceil((2 * (answerMaxMs + 60_000)) / 1000),
  budgetMs: 2 * answerMaxMs + 60_000,
  batch: 500,
  concurrency: 4,
  // An answer takes minutes at most: another user's run must not wait for it to end.
  oneAtATime: true,
  backoffMs: 60_000,
  maxBackoffMs: 15 * 60_000,
  maxAttempts: 1,
  rowIsClaim: true,
});

type RunJob = ClaimedRun & { attempts: number; result?: RunResult };

/**
 * Automations as a scheduled job: every tick reads which automations are due (and which "run
 * now" runs wait), claims each occurrence by inserting its run row (unique per automation and
 * occurrence: once across replicas and restarts), runs it and records the outcome together
 * with the automation's next occurrence. An occurrence more than a day late is recorded as
 * skipped, not run; several missed ones collapse into the latest (schedule.ts).
 */
export function automationJob(options: {
  automations: AutomationRepository;
  run: Omit<AutomationRunDependencies, 'logger'>;
  clock: Clock;
  logger: Logger;
  policy: JobPolicy;
}): JobKindDefinition<RunJob> {
  const { automations, clock, logger } = options;
  const leaseMs = options.policy.leaseSeconds * 1000;
  let tick = { now: clock.now(), keys: [] as string[] };

  const finish = async (job: RunJob, result: RunResult) => {
    const nextRunAt = job.manual
      ? null
      : (nextOccurrence(job.schedule, job.timezone, job.occurrence) ?? null);
    const reason = `Paused after ${FAILURES_TO_PAUSE} failed runs in a row. The last: ${result.error ?? 'failed'}`;
    const settled = await automations.finish(
      job,
      { ...result, nextRunAt, pauseAfter: FAILURES_TO_PAUSE, pauseReason: reason },
      clock.now(),
    );
    if (settled?.pausedNow) {
      logger.warn({ automationId: job.automationId }, 'automation paused after failed runs');
      await tellPaused(options.run, job, reason, logger);
    }
  };

  return {
    kind: 'automation_run',
    policy: options.policy,
    now: () => clock.now().getTime(),
    source: {
      async startSweep() {
        const now = clock.now();
        const keys: string[] = [];
        for (const due of await automations.due(now, options.policy.batch)) {
          // One automation whose schedule cannot be worked out (a stored timezone this Node no
          // longer knows) is passed over, not the whole tick: else nobody's would run again.
          let occurrence: Date | undefined;
          let next: Date | null = null;
          try {
            occurrence = latestOccurrence(due.schedule, due.timezone, due.nextRunAt, now);
            if (occurrence && now.getTime() - occurrence.getTime() >= MAX_LATENESS_MS) {
              next = nextOccurrence(due.schedule, due.timezone, now) ?? null;
            }
          } catch (error) {
            logger.warn(
              { automationId: due.id, errorName: (error as Error).name },
              'automation passed over: its schedule cannot be worked out',
            );
            continue;
          }
          if (!occurrence) continue;
          if (now.getTime() - occurrence.getTime() >= MAX_LATENESS_MS) {
            await automations.skip(due.id, occurrence, next, now);
            logger.info({ automationId: due.id }, 'automation occurrence skipped: a day late');
            continue;
          }
          keys.push(`${due.id}/${occurrence.toISOString()}`);
        }
        for (const waiting of await automations.waitingManualRuns(now, options.policy.batch)) {
          keys.push(`${waiting.id}/${waiting.occurrence.toISOString()}/now`);
        }
        tick = { now, keys };
      },
      pending: async (limit, offset) => tick.keys.slice(offset, offset + limit),
      async claim(key) {
        const parsed = parseKey(key);
        if (!parsed) return undefined;
        const now = clock.now();
        const until = new Date(now.getTime() + leaseMs);
        const claimed = parsed.manual
          ? await automations.claimManual(parsed.automationId, parsed.occurrence, now, until)
          : await automations.claimScheduled(parsed.automationId, parsed.occurrence, now, until);
        if (!claimed) return undefined;
        // Which process runs which occurrence: what a test that kills one looks for.
        logger.debug(
          { automationId: claimed.automationId, runId: claimed.runId },
          'automation run claimed',
        );
        return { ...claimed, attempts: 0 };
      },
      complete: (job) => finish(job, job.result ?? { status: 'failed', error: 'no result' }),
      retried: (job, _attempts, failure) =>
        finish(job, { status: 'failed', error: failure.detail ?? failure.errorKind }),
      release: (job) => automations.release(job, clock.now()),
      bury: (job, _attempts, failure) =>
        finish(job, { status: 'failed', error: failure.detail ?? failure.errorKind }),
    },
    async run(job, signal) {
      job.result = await runAutomation({ ...options.run, logger }, job, signal);
    },
    classify(error): JobFailure {
      const errorKind = errorKindOf(error);
      const detail = errorKind === 'timeout' ? 'the answer took too long' : `error: ${errorKind}`;
      return { errorKind, retry: 'never', detail };
    },
    async swept(report, settled, error) {
      if (error !== undefined) return; // the runner logs it
      await settled;
      const entry = { due: tick.keys.length, queued: report.queued, now: tick.now.toISOString() };
      if (entry.due > 0) logger.info(entry, 'automation tick');
      else logger.debug(entry, 'automation tick');
    },
  };
}

/** `<automation id>/<occurrence ISO>` (scheduled) or with `/now` (asked for). */
function parseKey(
  key: string,
): { automationId: string; occurrence: Date; manual: boolean } | undefined {
  const [automationId = '', iso = '', now, ...rest] = key.split('/');
  const occurrence = new Date(iso);
  if (!isUuid(automationId) || Number.isNaN(occurrence.getTime()) || rest.length > 0) {
    return undefined;
  }
  if (now !== undefined && now !== 'now') return undefined;
  return { automationId, occurrence, manual: now === 'now' };
}

/** The user is told on Telegram (when linked) that an automation was paused, and why. */
async function tellPaused(
  run: Omit<AutomationRunDependencies, 'logger'>,
  job: ClaimedRun,
  reason: string,
  logger: Logger,
): Promise<void> {
  const chatId = job.chatId ?? run.defaultChatId;
  if (!run.delivery || !chatId) return;
  try {
    await run.delivery.send(
      chatId,
      `⏸️ **${markdownLiteral(job.name)}**\n\n${reason}`,
      AbortSignal.timeout(60_000),
    );
  } catch (error) {
    logger.warn(
      { err: error, automationId: job.automationId },
      'automation pause not sent to Telegram',
    );
  }
}

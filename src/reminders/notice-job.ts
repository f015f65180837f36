import type { Logger } from 'pino';
import { errorKindOf } from '../background/error-kind.ts';
import type { JobFailure, JobKindDefinition, JobPolicy } from '../background/job-kind.ts';
import type {
  ClaimedNotice,
  NoticeCandidate,
  NoticeRepository,
} from '../storage/notice-repository.ts';
import type { Clock } from './clock.ts';
import { type NoticeChannel, NoticeFailure } from './notice-channel.ts';
import { noticeMessage } from './notice-message.ts';
import { type DaysBefore, dueNotice } from './notice-schedule.ts';
import { addDays } from './zoned-time.ts';

/**
 * A claim is owned for the lease. A sender that dies leaves its notice 'sending'; it is sent
 * again once the lease has passed. No send starts later than the budget before the lease ends
 * (sendMessage times out after 15 s), so a live sender never loses its claim mid-send. Four
 * sends at once: Telegram allows about 30 messages a second per bot. Retries after 5xx or
 * network errors: 1 min, doubling, at most 15 min; a refusal (400/403/404) is final.
 */
export const NOTICE_POLICY: Omit<JobPolicy, 'intervalMs'> = {
  leaseMs: 2 * 60_000,
  budgetMs: 30_000,
  batch: 100,
  concurrency: 4,
  backoffMs: 60_000,
  maxBackoffMs: 15 * 60_000,
  maxAttempts: Number.POSITIVE_INFINITY,
};

type NoticeJob = ClaimedNotice & {
  id: string;
  candidate: NoticeCandidate;
  daysBefore: DaysBefore;
};

/** No chat to send to: recorded once, never tried again. */
class Undeliverable extends Error {
  override readonly name = 'Undeliverable';
}

/**
 * D-7, D-1 and D-0 notices, as a scheduled job: every tick asks the database what is due,
 * claims it (the notice's row is the claim, so no other tick or replica sends it too), sends
 * it, and records the outcome right after Telegram answers. See the README for the hour, the
 * catch-up rule and the crash window.
 */
export function noticeJob(options: {
  notices: NoticeRepository;
  channel: NoticeChannel;
  clock: Clock;
  logger: Logger;
  policy: JobPolicy;
  /** TELEGRAM_DEFAULT_CHAT_ID: for users who linked no chat (single-user installs). */
  defaultChatId?: string | undefined;
  ticked?: (outcome: 'ok' | 'failed') => void;
}): JobKindDefinition<NoticeJob> {
  const { notices, channel, clock, logger, defaultChatId } = options;
  let tick = { now: clock.now(), due: [] as Omit<NoticeJob, 'attempts' | 'id'>[], total: 0 };

  return {
    kind: 'reminder_notice',
    policy: options.policy,
    now: () => clock.now().getTime(),
    source: {
      async startDrain() {
        const now = clock.now();
        // Every timezone's today lies within a day of UTC's; a notice is at most 7 days ahead.
        const today = now.toISOString().slice(0, 10);
        const due: (typeof tick)['due'] = [];
        for (const candidate of await notices.candidates(addDays(today, -1), addDays(today, 8))) {
          const daysBefore = dueNotice(candidate, now);
          if (daysBefore === undefined) continue;
          const row = candidate.notices.find((n) => n.daysBefore === daysBefore);
          const open = !row || row.status === 'sending' || row.status === 'retry';
          if (open && (!row?.nextAttemptAt || row.nextAttemptAt <= now)) {
            due.push({ reminderId: candidate.reminderId, daysBefore, candidate });
          }
        }
        tick = { now, due, total: due.length };
      },
      async lease(limit, leaseMs) {
        // What another replica claimed first is skipped: claim until some are ours, or none left.
        while (tick.due.length > 0) {
          const batch = tick.due.splice(0, limit);
          const claimedAt = clock.now();
          const claimed = await notices.claim(
            batch,
            claimedAt,
            new Date(claimedAt.getTime() + leaseMs),
          );
          const wanted = new Map(batch.map((item) => [keyOf(item), item]));
          if (claimed.length > 0) {
            return claimed.map((notice) => ({
              ...(wanted.get(keyOf(notice)) as (typeof tick)['due'][number]),
              attempts: notice.attempts,
              id: keyOf(notice),
            }));
          }
        }
        return [];
      },
      // The crash window: Telegram has the message, the database does not know yet. Nothing
      // else happens between the answer and this one-statement write.
      async complete(job) {
        await notices.markSent(job, clock.now());
        logger.info(
          { reminderId: job.reminderId, daysBefore: job.daysBefore },
          'reminder notice sent',
        );
      },
      retry: (job, at, failure) => notices.markRetry(job, at, failure.detail ?? failure.errorKind),
      release: (job, at) => notices.markRetry(job, at),
      bury: (job, failure) =>
        notices.markFailed(job, failure.errorKind === 'no_chat' ? 'undeliverable' : 'failed', {
          error: failure.detail ?? failure.errorKind,
          errorKind: failure.errorKind,
          at: clock.now(),
        }),
    },
    async run({ candidate, daysBefore, reminderId }, signal) {
      const chatId = candidate.chatId ?? defaultChatId;
      if (!chatId) {
        logger.warn(
          { userId: candidate.userId, reminderId, daysBefore },
          'reminder notice undeliverable: no Telegram chat',
        );
        throw new Undeliverable('no Telegram chat linked');
      }
      await channel.sendMessage(
        chatId,
        noticeMessage(candidate, daysBefore, candidate.locale),
        signal,
      );
    },
    classify(error): JobFailure {
      if (error instanceof Undeliverable) {
        return { errorKind: 'no_chat', retry: 'never', detail: error.message };
      }
      if (!(error instanceof NoticeFailure)) {
        return { errorKind: errorKindOf(error), retry: 'backoff', detail: 'unexpected error' };
      }
      const errorKind = error.status ? `http_${error.status}` : `telegram_${error.failure}`;
      // The channel's messages are ours and Telegram's descriptions: no user's words.
      if (error.failure === 'permanent')
        return { errorKind, retry: 'never', detail: error.message };
      if (error.failure === 'rate_limited') {
        const pauseMs = (error.retryAfterSeconds ?? 1) * 1000;
        return { errorKind, retry: 'pause', pauseMs, detail: error.message };
      }
      return { errorKind, retry: 'backoff', detail: error.message };
    },
    drained(report, error) {
      options.ticked?.(error === undefined ? 'ok' : 'failed');
      if (error !== undefined) return; // the runner logs it
      // `now` lets a test that moved the clock see the first tick that read the new time.
      const entry = {
        due: tick.total,
        claimed: report.leased,
        sent: report.done,
        now: tick.now.toISOString(),
      };
      if (entry.due > 0) logger.info(entry, 'reminder tick');
      else logger.debug(entry, 'reminder tick');
    },
  };
}

const keyOf = (notice: { reminderId: string; daysBefore: number }) =>
  `${notice.reminderId}/D-${notice.daysBefore}`;

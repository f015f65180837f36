import type { Logger } from 'pino';
import { errorKindOf } from '../background/error-kind.ts';
import type { JobFailure, JobKindDefinition, JobPolicy } from '../background/job-kind.ts';
import { isUuid } from '../is-uuid.ts';
import type {
  ClaimedNotice,
  NoticeCandidate,
  NoticeRepository,
} from '../storage/notice-repository.ts';
import type { Clock } from './clock.ts';
import { type NoticeChannel, NoticeFailure } from './notice-channel.ts';
import { noticeMessage } from './notice-message.ts';
import { type DaysBefore, dueNotice, NOTICE_OFFSETS } from './notice-schedule.ts';
import { addDays } from './zoned-time.ts';

/**
 * A notice's row is its claim, owned for the lease by the clock of the reminders (which a test
 * moves). A sender that dies leaves its notice 'sending'; it is sent again once the lease has
 * passed. Four sends at once: Telegram allows about 30 messages a second per bot. Retries
 * after 5xx or network errors: 1 min, doubling, at most 15 min, kept on the row by that same
 * clock; a refusal (400/403/404) is final.
 */
export const NOTICE_POLICY: Omit<JobPolicy, 'intervalMs'> = {
  leaseSeconds: 120,
  budgetMs: 30_000,
  batch: 1_000,
  concurrency: 4,
  backoffMs: 60_000,
  maxBackoffMs: 15 * 60_000,
  maxAttempts: Number.POSITIVE_INFINITY,
  rowIsClaim: true,
};

type NoticeJob = ClaimedNotice & {
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
  let tick = { now: clock.now(), due: new Map<string, NoticeCandidate>() };
  const leaseMs = options.policy.leaseSeconds * 1000;

  return {
    kind: 'reminder_notice',
    policy: options.policy,
    now: () => clock.now().getTime(),
    source: {
      async startSweep() {
        const now = clock.now();
        // Every timezone's today lies within a day of UTC's; a notice is at most 7 days ahead.
        const today = now.toISOString().slice(0, 10);
        const due = new Map<string, NoticeCandidate>();
        for (const candidate of await notices.candidates(addDays(today, -1), addDays(today, 8))) {
          const daysBefore = dueNotice(candidate, now);
          if (daysBefore === undefined) continue;
          const row = candidate.notices.find((n) => n.daysBefore === daysBefore);
          const open = !row || row.status === 'sending' || row.status === 'retry';
          if (open && (!row?.nextAttemptAt || row.nextAttemptAt <= now)) {
            due.set(keyOf({ reminderId: candidate.reminderId, daysBefore }), candidate);
          }
        }
        tick = { now, due };
      },
      pending: async (limit, offset) => [...tick.due.keys()].slice(offset, offset + limit),
      // Sent by whichever replica takes the job: what another replica's tick found is read
      // again here, and claimed only if it is still due by this replica's clock.
      async claim(key) {
        const parsed = parseKey(key);
        if (!parsed) return undefined; // not a notice's key: nothing to send
        const { reminderId, daysBefore } = parsed;
        const candidate = tick.due.get(key) ?? (await notices.candidate(reminderId));
        if (!candidate || dueNotice(candidate, clock.now()) !== daysBefore) return undefined;
        const claimedAt = clock.now();
        const [claimed] = await notices.claim(
          [{ reminderId, daysBefore }],
          claimedAt,
          new Date(claimedAt.getTime() + leaseMs),
        );
        return claimed && { ...claimed, candidate, daysBefore };
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
      retried: (job, _attempts, failure, delayMs) =>
        notices.markRetry(
          job,
          new Date(clock.now().getTime() + (delayMs ?? 0)),
          failure.detail ?? failure.errorKind,
        ),
      release: (job) => notices.markRetry(job, clock.now()),
      bury: (job, _attempts, failure) =>
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
    async swept(report, settled, error) {
      options.ticked?.(error === undefined ? 'ok' : 'failed');
      if (error !== undefined) return; // the runner logs it
      // Logged once the notices it queued were tried: a test that moved the clock reads the
      // outcome after the first tick that read the new time (`now`).
      await settled;
      const entry = { due: tick.due.size, queued: report.queued, now: tick.now.toISOString() };
      if (entry.due > 0) logger.info(entry, 'reminder tick');
      else logger.debug(entry, 'reminder tick');
    },
  };
}

const keyOf = (notice: { reminderId: string; daysBefore: number }) =>
  `${notice.reminderId}/D-${notice.daysBefore}`;

/** The notice a job names (`<reminder id>/D-<days>`), if it names one. */
export function parseKey(key: string): { reminderId: string; daysBefore: DaysBefore } | undefined {
  const [reminderId = '', days, ...rest] = key.split('/D-');
  const daysBefore = NOTICE_OFFSETS.find((offset) => String(offset) === days);
  if (rest.length > 0 || daysBefore === undefined || !isUuid(reminderId)) return undefined;
  return { reminderId, daysBefore };
}

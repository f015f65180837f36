import type { Logger } from 'pino';
import type { SchedulerMetrics } from '../metrics/metrics.ts';
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

export interface ReminderSchedulerOptions {
  notices: NoticeRepository;
  channel: NoticeChannel;
  clock: Clock;
  logger: Logger;
  intervalMs: number;
  /** TELEGRAM_DEFAULT_CHAT_ID: for users who linked no chat (single-user installs). */
  defaultChatId?: string | undefined;
  metrics?: SchedulerMetrics | undefined;
}

/** Notices claimed per statement; each batch has its own lease. */
const BATCH = 100;
/** Sends in flight at once: Telegram allows about 30 messages a second per bot. */
const CONCURRENCY = 4;
/**
 * How long a claim is owned. A sender that dies leaves its notice 'sending'; it is sent again
 * once this has passed. No send starts later than SEND_BUDGET_MS before the lease ends
 * (sendMessage times out after 15 s), so a live sender never loses its claim mid-send.
 */
const LEASE_MS = 2 * 60_000;
const SEND_BUDGET_MS = 30_000;
/** Retries after 5xx or network errors: 1 min, doubling, at most 15 min. */
const RETRY_BASE_MS = 60_000;
const RETRY_MAX_MS = 15 * 60_000;

export interface TickReport {
  due: number;
  claimed: number;
  sent: number;
}

/**
 * Sends D-7, D-1 and D-0 notices. Every tick asks the database what is due, claims it (so no
 * other tick or replica sends it too), sends it, and records the outcome right after Telegram
 * answers. See the README for the hour, the catch-up rule and the crash window.
 */
export class ReminderScheduler {
  readonly #options: ReminderSchedulerOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopping = false;
  /** After a 429, no message leaves before this instant (Telegram's limit is per bot). */
  #pausedUntil = 0;

  constructor(options: ReminderSchedulerOptions) {
    this.#options = options;
  }

  start(): void {
    this.#stopping = false;
    const loop = () => {
      this.#running = this.tick()
        .then(
          () => this.#options.metrics?.reminderTick('ok'),
          (error: unknown) => {
            this.#options.metrics?.reminderTick('failed');
            this.#options.logger.warn({ err: error }, 'reminder tick failed');
          },
        )
        .finally(() => {
          this.#running = undefined;
          if (!this.#stopping) this.#timer = setTimeout(loop, this.#options.intervalMs);
        });
    };
    loop();
  }

  /** Lets the sends in flight finish (each is short), starts no more. */
  async stop(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  async tick(): Promise<TickReport> {
    const { notices, clock, logger } = this.#options;
    const now = clock.now();
    // Every timezone's today lies within a day of UTC's; a notice is at most 7 days ahead.
    const today = now.toISOString().slice(0, 10);
    const candidates = await notices.candidates(addDays(today, -1), addDays(today, 8));
    const wanted = new Map<string, { candidate: NoticeCandidate; daysBefore: DaysBefore }>();
    for (const candidate of candidates) {
      const daysBefore = dueNotice(candidate, now);
      if (daysBefore === undefined) continue;
      const row = candidate.notices.find((n) => n.daysBefore === daysBefore);
      const open = !row || row.status === 'sending' || row.status === 'retry';
      if (open && (!row?.nextAttemptAt || row.nextAttemptAt <= now)) {
        wanted.set(keyOf(candidate.reminderId, daysBefore), { candidate, daysBefore });
      }
    }
    const report: TickReport = { due: wanted.size, claimed: 0, sent: 0 };
    const queue = [...wanted.values()];
    while (queue.length > 0 && !this.#stopping && clock.now().getTime() >= this.#pausedUntil) {
      const batch = queue.splice(0, BATCH);
      const claimedAt = clock.now();
      const leaseEnd = claimedAt.getTime() + LEASE_MS;
      const claimed = await notices.claim(
        batch.map(({ candidate, daysBefore }) => ({
          reminderId: candidate.reminderId,
          daysBefore,
        })),
        claimedAt,
        new Date(leaseEnd),
      );
      report.claimed += claimed.length;
      const work = claimed.map((notice) => ({
        notice,
        ...(wanted.get(keyOf(notice.reminderId, notice.daysBefore)) as {
          candidate: NoticeCandidate;
          daysBefore: DaysBefore;
        }),
      }));
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          for (let item = work.shift(); item; item = work.shift()) {
            const lateStart = clock.now().getTime() > leaseEnd - SEND_BUDGET_MS;
            if (this.#stopping || lateStart || clock.now().getTime() < this.#pausedUntil) {
              // Not tried: due again at once (or when the 429 pause ends), by anyone.
              const at = new Date(Math.max(clock.now().getTime(), this.#pausedUntil));
              await notices.markRetry(item.notice, at, 'not sent yet', false);
              continue;
            }
            if (await this.#send(item.notice, item.candidate, item.daysBefore)) report.sent++;
          }
        }),
      );
    }
    // `now` lets a test that moved the clock see the first tick that read the new time.
    const entry = { ...report, now: now.toISOString() };
    if (report.due > 0) logger.info(entry, 'reminder tick');
    else logger.debug(entry, 'reminder tick');
    return report;
  }

  /** Sends one claimed notice and records what happened; true when Telegram accepted it. */
  async #send(notice: ClaimedNotice, reminder: NoticeCandidate, daysBefore: DaysBefore) {
    const { notices, channel, clock, logger, defaultChatId } = this.#options;
    const log = logger.child({ reminderId: notice.reminderId, daysBefore });
    const chatId = reminder.chatId ?? defaultChatId;
    if (!chatId) {
      // Recorded once, logged once: the row is settled and never tried again.
      await notices.markFailed(notice, 'undeliverable', 'no Telegram chat linked');
      this.#options.metrics?.notice('failed');
      log.warn({ userId: reminder.userId }, 'reminder notice undeliverable: no Telegram chat');
      return false;
    }
    const text = noticeMessage(reminder, daysBefore, reminder.locale);
    try {
      await channel.sendMessage(chatId, text);
    } catch (error) {
      await this.#recordFailure(notice, error, log);
      return false;
    }
    // The crash window: Telegram has the message, the database does not know yet. Nothing
    // else happens between the answer and this one-statement write.
    await notices.markSent(notice, clock.now());
    this.#options.metrics?.notice('sent');
    log.info('reminder notice sent');
    return true;
  }

  async #recordFailure(notice: ClaimedNotice, error: unknown, log: Logger): Promise<void> {
    const { notices, clock, metrics } = this.#options;
    const now = clock.now().getTime();
    const permanent = error instanceof NoticeFailure && error.failure === 'permanent';
    metrics?.notice(permanent ? 'failed' : 'retry');
    if (!(error instanceof NoticeFailure)) {
      await notices.markRetry(notice, new Date(now + RETRY_BASE_MS), 'unexpected error');
      log.error({ err: error }, 'reminder notice failed unexpectedly');
      return;
    }
    const summary = { status: error.status, failure: error.failure, attempts: notice.attempts + 1 };
    if (error.failure === 'permanent') {
      await notices.markFailed(notice, 'failed', error.message);
      log.warn(summary, 'reminder notice refused by Telegram for good');
    } else if (error.failure === 'rate_limited') {
      this.#pausedUntil = Math.max(this.#pausedUntil, now + (error.retryAfterSeconds ?? 1) * 1000);
      await notices.markRetry(notice, new Date(this.#pausedUntil), error.message);
      log.warn({ ...summary, retryAfterSeconds: error.retryAfterSeconds }, 'Telegram rate limit');
    } else {
      const delay = Math.min(RETRY_BASE_MS * 2 ** notice.attempts, RETRY_MAX_MS);
      await notices.markRetry(notice, new Date(now + delay), error.message);
      log.warn({ ...summary, retryInMs: delay }, 'reminder notice not sent yet');
    }
  }
}

const keyOf = (reminderId: string, daysBefore: number) => `${reminderId}/${daysBefore}`;

import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Update } from 'grammy/types';
import type { Logger } from 'pino';
import type { LeaseRepository } from '../storage/lease-repository.ts';
import { callFailure, grammySignal, type TelegramApi } from './telegram-api.ts';
import { ALLOWED_UPDATES } from './telegram-channel.ts';

export interface UpdatePollerOptions {
  telegram: TelegramApi;
  leases: LeaseRepository;
  /** Claims and starts handling updates; resolves once they are claimed. */
  receive(updates: readonly Update[]): Promise<void>;
  logger: Logger;
  /** getUpdates long-poll wait, seconds (TELEGRAM_POLL_TIMEOUT_SECONDS); sets the lease's length. */
  pollSeconds: number;
}

const LEASE = 'telegram-poller';
/** Wait before polling again after an error, or while another replica polls. */
const IDLE_MS = 5_000;
/** Longest a getUpdates may take beyond its long-poll wait (then it is aborted). */
const CALL_MARGIN_MS = 15_000;
/** Lease beyond a poll's longest call, for the renewals around it (the claim gets a renewed lease). */
const CLAIM_MARGIN_MS = 15_000;

/**
 * How long the polling lease is held: one getUpdates at its longest (its wait, plus
 * CALL_MARGIN_MS after which it is aborted) plus CLAIM_MARGIN_MS. It is renewed before every
 * getUpdates and again before claiming what one returned, so a live poller does not lose it
 * mid-poll: each stretch it covers is either the call, which is bounded, or the claim (one
 * database statement), which gets a whole fresh lease however late the call returned. A
 * poller that dies is replaced only once its lease runs out, so it is no longer than that:
 * 55 s with the default 25 s wait, about 30 s with a short one. Were it lost anyway, no update
 * would be handled twice (they are claimed in the database before the offset moves, and the
 * lost holder's save is refused); two getUpdates could overlap, which Telegram answers 409.
 */
function pollLeaseMs(pollSeconds: number): number {
  return pollSeconds * 1000 + CALL_MARGIN_MS + CLAIM_MARGIN_MS;
}

/**
 * TELEGRAM_POLLING: reads the bot's updates with long polling. Only the replica holding the
 * lease polls (Telegram answers a second getUpdates with 409); the offset lives with the lease.
 * Updates are claimed in the database before the offset moves past them, so a crash between
 * the two repeats nothing, and handling (a long answer) never holds up the next poll.
 */
export class UpdatePoller {
  readonly #options: UpdatePollerOptions;
  readonly #holder = randomUUID();
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;
  /** Whether this poller removed any webhook (Telegram answers getUpdates 409 while one is set). */
  #webhookRemoved = false;

  constructor(options: UpdatePollerOptions) {
    this.#options = options;
  }

  start(): void {
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
    await this.#options.leases.release(LEASE, this.#holder).catch(() => {});
  }

  async #run(): Promise<void> {
    const { telegram, leases, logger, pollSeconds, receive } = this.#options;
    const signal = this.#stop.signal;
    const leaseMs = pollLeaseMs(pollSeconds);
    while (!signal.aborted) {
      try {
        const state = await leases.acquire(LEASE, this.#holder, leaseMs);
        if (!state) {
          await sleep(IDLE_MS, signal);
          continue;
        }
        if (!this.#webhookRemoved) {
          // A webhook set earlier (a deployment that used TELEGRAM_WEBHOOK_URL) would make every
          // poll a 409. Its pending updates are kept: they are read by the next poll.
          await telegram.bestEffort.deleteWebhook({ drop_pending_updates: false });
          this.#webhookRemoved = true;
          logger.info('Telegram webhook removed, if any: polling');
          // That call is not bounded like a poll: renew the lease before polling.
          continue;
        }
        const offset = typeof state.offset === 'number' ? state.offset : 0;
        const call = AbortSignal.any([
          signal,
          AbortSignal.timeout(pollSeconds * 1000 + CALL_MARGIN_MS),
        ]);
        const updates = await telegram.bestEffort.getUpdates(
          { offset, timeout: pollSeconds, allowed_updates: [...ALLOWED_UPDATES] },
          grammySignal(call),
        );
        if (updates.length === 0) continue;
        // Renewed for the claim, so a slow database write gets a whole lease, not what the
        // poll left of one. Were it lost meanwhile (this renewal came CLAIM_MARGIN_MS late),
        // the claim still keeps every update once, and the save below is refused.
        await leases.acquire(LEASE, this.#holder, leaseMs);
        await receive(updates);
        const next = Math.max(...updates.map((u) => u.update_id)) + 1;
        await leases.save(LEASE, this.#holder, { offset: next });
        logger.debug({ offset: next, updates: updates.length }, 'Telegram updates taken');
      } catch (error) {
        if (signal.aborted) break;
        const failure = callFailure(error);
        if (failure?.status === 429) telegram.gate.pause(failure.retryAfterSeconds ?? 1);
        // A webhook set while polling (another deployment of this bot): remove it again.
        if (failure?.status === 409 && failure.description.includes('webhook')) {
          this.#webhookRemoved = false;
        }
        logger.warn({ err: error, status: failure?.status }, 'Telegram polling paused');
        // A 429 (Telegram's, or the gate refusing while sending is paused after one) is over
        // when the pause is: waiting IDLE_MS would keep messages waiting up to 5 s more.
        const paused = failure?.status === 429 ? telegram.gate.remainingMs() : 0;
        await sleep(paused > 0 ? paused : IDLE_MS, signal);
      }
    }
  }
}

/** Waits `ms`, or less when `signal` aborts (its listener goes with the timer). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => {});
}

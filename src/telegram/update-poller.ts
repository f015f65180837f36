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
  /** getUpdates long-poll wait, seconds. */
  pollSeconds: number;
}

const LEASE = 'telegram-poller';
/** Held while polling; renewed before every getUpdates, so it outlives one poll with margin. */
const LEASE_MS = 90_000;
/** Wait before polling again after an error, or while another replica polls. */
const IDLE_MS = 5_000;
/** Longest a getUpdates may take beyond its long-poll wait. */
const CALL_MARGIN_MS = 15_000;

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
    while (!signal.aborted) {
      try {
        const state = await leases.acquire(LEASE, this.#holder, LEASE_MS);
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
        await sleep(IDLE_MS, signal);
      }
    }
  }
}

/** Waits `ms`, or less when `signal` aborts (its listener goes with the timer). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => {});
}

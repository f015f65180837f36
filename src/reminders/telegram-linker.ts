import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { LeaseRepository } from '../storage/lease-repository.ts';
import type { Clock } from './clock.ts';
import { hashLinkCode } from './link-code.ts';
import type { TelegramBotApi, TelegramUpdate } from './telegram-bot-api.ts';

export interface TelegramLinkerOptions {
  api: TelegramBotApi;
  leases: LeaseRepository;
  /** Spends a link code for a chat; the user id, or undefined for an unknown or old code. */
  linkChat(codeHash: string, chatId: string, now: Date): Promise<string | undefined>;
  clock: Clock;
  logger: Logger;
  /** getUpdates long-poll wait, seconds. */
  pollSeconds: number;
}

const LEASE = 'telegram-poller';
/** Held while polling; renewed before every getUpdates, so it outlives one poll with margin. */
const LEASE_MS = 90_000;
/** Wait before polling again after an error, or while another replica polls. */
const IDLE_MS = 5_000;
const START = /^\/start(?:@\w+)?\s+([A-Za-z0-9_-]{1,64})\s*$/;

/**
 * TELEGRAM_POLLING: reads the bot's messages with long polling and links a chat to the user
 * whose one-time code it sends (`/start <code>`). Only the replica holding the lease polls
 * (Telegram answers a second getUpdates with 409); the offset lives with the lease, so the
 * next holder neither skips nor repeats messages.
 */
export class TelegramLinker {
  readonly #options: TelegramLinkerOptions;
  readonly #holder = randomUUID();
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(options: TelegramLinkerOptions) {
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
    const { api, leases, logger, pollSeconds } = this.#options;
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      try {
        const state = await leases.acquire(LEASE, this.#holder, LEASE_MS);
        if (!state) {
          await sleep(IDLE_MS, signal);
          continue;
        }
        const offset = typeof state.offset === 'number' ? state.offset : 0;
        const updates = await api.getUpdates(offset, pollSeconds, signal);
        for (const update of updates) await this.#handle(update);
        if (updates.length > 0) {
          const next = Math.max(...updates.map((u) => u.update_id)) + 1;
          await leases.save(LEASE, this.#holder, { offset: next });
        }
      } catch (error) {
        if (signal.aborted) break;
        logger.warn({ err: error }, 'Telegram polling paused');
        await sleep(IDLE_MS, signal);
      }
    }
  }

  async #reply(chatId: string, text: string): Promise<void> {
    try {
      await this.#options.api.sendMessage(chatId, text);
    } catch (error) {
      this.#options.logger.warn({ err: error }, 'Telegram link reply not sent');
    }
  }

  async #handle(update: TelegramUpdate): Promise<void> {
    const { linkChat, clock, logger } = this.#options;
    const message = update.message;
    if (!message?.text) return;
    const chatId = String(message.chat.id);
    const match = START.exec(message.text);
    const korean = message.from?.language_code === 'ko';
    if (!match?.[1]) {
      if (message.text.startsWith('/start')) {
        await this.#reply(
          chatId,
          korean
            ? 'Parley에서 받은 연결 코드와 함께 보내 주세요: /start <코드>'
            : 'Send the link code you got from Parley: /start <code>',
        );
      }
      return;
    }
    const userId = await linkChat(hashLinkCode(match[1]), chatId, clock.now());
    logger.info({ linked: userId !== undefined }, 'Telegram link attempt');
    await this.#reply(
      chatId,
      userId === undefined
        ? korean
          ? '이 연결 코드는 없거나 만료되었습니다. Parley에서 새 코드를 받아 주세요.'
          : 'This link code is unknown or has expired. Ask Parley for a new one.'
        : korean
          ? '연결되었습니다. 이제 이 채팅으로 리마인더 알림을 보내 드립니다.'
          : 'Linked. Your reminder notices will come to this chat.',
    );
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

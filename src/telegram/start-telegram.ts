import type { Logger } from 'pino';
import type { UsageLimits } from '../accounts/usage-limits.ts';
import type { ChatService } from '../assistant/chat-service.ts';
import type { Config } from '../config.ts';
import type { ConversationService } from '../conversations/conversation-service.ts';
import type { IngestionService } from '../documents/ingestion-service.ts';
import type { FeedbackService } from '../feedback/feedback-service.ts';
import {
  TELEGRAM_WEBHOOK_PATH,
  type TelegramWebhookSettings,
  webhookSecretFor,
} from '../http/routes/telegram-webhook.ts';
import type { Clock } from '../reminders/clock.ts';
import type { ReminderService } from '../reminders/reminder-service.ts';
import type { DetachedRuns } from '../runs/detached-runs.ts';
import type { LeaseRepository } from '../storage/lease-repository.ts';
import type { TelegramRepository } from '../storage/telegram-repository.ts';
import type { ImageIntake } from '../vision/image-intake.ts';
import { ChatDoor, type ChatDoorDependencies } from './chat-door.ts';
import { registerCommands } from './commands.ts';
import { ConversationDoor } from './conversation-door.ts';
import { DocumentDoor } from './document-door.ts';
import { ReminderDoor } from './reminder-door.ts';
import { callFailure, type TelegramApi } from './telegram-api.ts';
import { ALLOWED_UPDATES, TelegramChannel } from './telegram-channel.ts';
import { UpdatePoller } from './update-poller.ts';

export interface TelegramStartOptions {
  config: Config;
  telegram: TelegramApi;
  store: TelegramRepository;
  leases: LeaseRepository;
  chats: ChatService;
  /** Where chat answers run, detached from the door (as resumable /chat answers). */
  runs: DetachedRuns;
  conversations: ConversationService;
  limits: UsageLimits;
  feedback: FeedbackService;
  reminders: ReminderService;
  ingestion: IngestionService;
  images: ImageIntake;
  clock: Clock;
  shutdown: AbortSignal;
  logger: Logger;
  /** Tool calls asked about with buttons (MCP approvals); absent: they are refused. */
  decideApproval?: ChatDoorDependencies['decideApproval'];
}

export interface TelegramDoor {
  /** For the HTTP edge, in webhook mode. */
  webhook: TelegramWebhookSettings | undefined;
  start(): void;
  /** Stops taking updates, then waits for the ones taken to be handled. */
  stop(): Promise<void>;
}

/**
 * Builds the Telegram door from the configuration: nothing reads the bot's messages unless
 * TELEGRAM_POLLING (long polling, one replica at a time) or TELEGRAM_WEBHOOK_URL (every
 * replica, behind a load balancer) is set; notices go out either way.
 */
export function startTelegram(options: TelegramStartOptions): TelegramDoor | undefined {
  const { config, telegram, logger } = options;
  const webhookUrl = config.TELEGRAM_WEBHOOK_URL;
  if (!config.TELEGRAM_POLLING && !webhookUrl) return undefined;
  const channel = new TelegramChannel({
    telegram,
    store: options.store,
    clock: options.clock,
    logger,
    chat: new ChatDoor({
      telegram,
      chats: options.chats,
      runs: options.runs,
      conversationOf: async (chatId, userId) =>
        (await options.store.conversationOf(chatId)) ??
        (await options.conversations.placeChat(userId, {})).conversationId,
      admitChat: (principal, userId) => options.limits.admitChat(principal, userId),
      feedback: options.feedback,
      images: options.images,
      imageMaxBytes: config.IMAGE_MAX_BYTES,
      messageMaxChars: config.MESSAGE_MAX_CHARS,
      streamIntervalMs: config.TELEGRAM_STREAM_INTERVAL_MS,
      shutdown: options.shutdown,
      decideApproval: options.decideApproval,
    }),
    documents: new DocumentDoor({
      telegram,
      ingestion: options.ingestion,
      limits: options.limits,
      maxBytes: config.INGEST_MAX_BYTES,
      logger,
    }),
    reminders: new ReminderDoor(telegram, options.reminders, logger),
    conversations: new ConversationDoor(telegram, options.conversations, options.store, logger),
  });
  const secret =
    config.TELEGRAM_WEBHOOK_SECRET ?? webhookSecretFor(config.TELEGRAM_BOT_TOKEN ?? '');
  const poller = webhookUrl
    ? undefined
    : new UpdatePoller({
        telegram,
        leases: options.leases,
        receive: (updates) => channel.receive(updates),
        logger,
        pollSeconds: config.TELEGRAM_POLL_TIMEOUT_SECONDS,
      });
  if (webhookUrl && config.TELEGRAM_POLLING) {
    logger.warn('TELEGRAM_WEBHOOK_URL is set: TELEGRAM_POLLING is ignored (Telegram allows one)');
  }
  return {
    webhook: webhookUrl ? { secret, receive: (updates) => channel.receive(updates) } : undefined,
    start() {
      void registerCommands(telegram, logger);
      if (webhookUrl) {
        const url = new URL(webhookUrl);
        if (!url.pathname.endsWith(TELEGRAM_WEBHOOK_PATH)) {
          logger.warn(
            `TELEGRAM_WEBHOOK_URL should end in ${TELEGRAM_WEBHOOK_PATH}: Parley takes updates there`,
          );
        }
        telegram.reliable
          .setWebhook(webhookUrl, {
            secret_token: secret,
            allowed_updates: [...ALLOWED_UPDATES],
          })
          .then(
            () => logger.info('Telegram webhook set'),
            (error: unknown) =>
              logger.error(
                { err: error, status: callFailure(error)?.status },
                'Telegram webhook not set: the bot will not hear messages',
              ),
          );
      }
      poller?.start();
    },
    async stop() {
      await poller?.stop();
      await channel.drain();
    },
  };
}

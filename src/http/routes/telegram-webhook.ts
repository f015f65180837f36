import { createHash, timingSafeEqual } from 'node:crypto';
import type { Update } from 'grammy/types';
import { z } from 'zod';
import { AppError } from '../../errors.ts';
import type { App } from '../app-types.ts';
import type { CredentialThrottle } from '../credential-throttle.ts';

export interface TelegramWebhookSettings {
  /** What Telegram sends as X-Telegram-Bot-Api-Secret-Token (given to setWebhook). */
  secret: string;
  /** Claims the update and starts handling it; resolves once it is claimed. */
  receive(updates: readonly Update[]): Promise<void>;
}

export const TELEGRAM_WEBHOOK_PATH = '/telegram/webhook';

const update = z.looseObject({ update_id: z.number().int().nonnegative() });

/**
 * TELEGRAM_WEBHOOK_URL: Telegram posts each update here. Not the API token (Telegram cannot
 * send one) but the webhook's secret, compared in constant time under the bearer throttle; a
 * request without it is a 401. The update is claimed before the 200 (a failure to claim is a
 * 500, and Telegram delivers it again) and answered in the background, so Telegram never
 * waits on a model.
 */
export function registerTelegramWebhookRoute(
  app: App,
  settings: TelegramWebhookSettings,
  throttle: CredentialThrottle,
): void {
  const expected = digest(settings.secret);
  app.post(
    TELEGRAM_WEBHOOK_PATH,
    { config: { public: true }, schema: { hide: true, body: update } },
    async (request) => {
      const header = request.headers['x-telegram-bot-api-secret-token'];
      const given = typeof header === 'string' ? header : undefined;
      // Under the API's throttle: a guessed secret would let anyone speak as a linked chat.
      if (!throttle.verify(request, given, (g) => timingSafeEqual(digest(g), expected))) {
        throw new AppError('unauthorized', 401, 'Unauthorized');
      }
      await settings.receive([request.body as unknown as Update]);
      return {};
    },
  );
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/** The default webhook secret: derived from the bot token, so every replica agrees. */
export const webhookSecretFor = (botToken: string) =>
  createHash('sha256').update(`parley-telegram-webhook:${botToken}`).digest('hex');

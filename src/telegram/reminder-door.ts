import type { Logger } from 'pino';
import { AppError } from '../errors.ts';
import { isUuid } from '../is-uuid.ts';
import type { ReminderService } from '../reminders/reminder-service.ts';
import type { Incoming } from './incoming.ts';
import { sendReply } from './send-reply.ts';
import type { TelegramApi } from './telegram-api.ts';
import { type Language, textsFor } from './telegram-texts.ts';

/** Reminders listed with /reminders, at most this many (one button each). */
const LISTED = 20;

/** `/reminders`: the upcoming ones, each with a cancel button (`r:<id>`). */
export class ReminderDoor {
  readonly #telegram: TelegramApi;
  readonly #reminders: Pick<ReminderService, 'list' | 'cancel'>;
  readonly #logger: Logger;

  constructor(
    telegram: TelegramApi,
    reminders: Pick<ReminderService, 'list' | 'cancel'>,
    logger: Logger,
  ) {
    this.#telegram = telegram;
    this.#reminders = reminders;
    this.#logger = logger;
  }

  async list(incoming: Incoming): Promise<void> {
    const t = textsFor(incoming.language);
    const upcoming = (await this.#reminders.list(incoming.userId, false)).slice(0, LISTED);
    if (upcoming.length === 0) {
      return sendReply(this.#telegram, incoming.chatId, t.noReminders, this.#logger);
    }
    const lines = upcoming.map(
      (r, i) => `${i + 1}. ${r.dueOn}${r.time ? ` ${r.time.slice(0, 5)}` : ''} — ${r.title}`,
    );
    const cancel = incoming.language === 'ko' ? '취소' : 'Cancel';
    await sendReply(
      this.#telegram,
      incoming.chatId,
      [t.remindersTitle, ...lines].join('\n'),
      this.#logger,
      {
        inline_keyboard: upcoming.map((r, i) => [
          { text: `❌ ${cancel} ${i + 1}`, callback_data: `r:${r.id}` },
        ]),
      },
    );
  }

  async cancel(userId: string, id: string, language: Language): Promise<string> {
    const t = textsFor(language);
    // Button data comes from the client: anything but a reminder id names no reminder.
    if (!isUuid(id)) return t.cancelGone;
    try {
      await this.#reminders.cancel(userId, id);
      return t.cancelled;
    } catch (error) {
      if (AppError.isInstance(error) && error.status === 404) return t.cancelGone;
      throw error;
    }
  }
}

import type { InlineKeyboardButton } from 'grammy/types';
import type { Logger } from 'pino';
import { AppError } from '../errors.ts';
import { isUuid } from '../is-uuid.ts';
import type { ReminderService } from '../reminders/reminder-service.ts';
import type { Incoming } from './incoming.ts';
import { MESSAGE_MAX_CHARS } from './part-message.ts';
import { sendReply } from './send-reply.ts';
import type { TelegramApi } from './telegram-api.ts';
import { type Language, textsFor } from './telegram-texts.ts';

/** Reminders listed with /reminders, at most this many (one button each). */
const LISTED = 20;

/** A reminder in the list: its line, and the button that cancels it. */
interface Listed {
  line: string;
  button: InlineKeyboardButton.CallbackButton;
}

interface ListMessage {
  text: string;
  buttons: InlineKeyboardButton.CallbackButton[];
}

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
    const cancel = incoming.language === 'ko' ? '취소' : 'Cancel';
    const listed = upcoming.map((r, i) => ({
      line: `${i + 1}. ${r.dueOn}${r.time ? ` ${r.time.slice(0, 5)}` : ''} — ${r.title}`,
      button: { text: `❌ ${cancel} ${i + 1}`, callback_data: `r:${r.id}` },
    }));
    for (const message of inMessages(t.remindersTitle, listed)) {
      await sendReply(this.#telegram, incoming.chatId, message.text, this.#logger, {
        inline_keyboard: message.buttons.map((button) => [button]),
      });
    }
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

/**
 * The list as messages Telegram takes, each with the buttons of its own lines: 20 titles of up
 * to 200 characters pass the 4,096 characters of one message, which Telegram refused, and the
 * user got nothing.
 */
function inMessages(title: string, listed: Listed[]): ListMessage[] {
  let current: ListMessage = { text: title, buttons: [] };
  const messages = [current];
  for (const { line, button } of listed) {
    if (current.buttons.length > 0 && current.text.length + 1 + line.length > MESSAGE_MAX_CHARS) {
      current = { text: line, buttons: [button] };
      messages.push(current);
    } else {
      current.text += `\n${line}`;
      current.buttons.push(button);
    }
  }
  return messages;
}

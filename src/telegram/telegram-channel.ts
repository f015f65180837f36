import type { CallbackQuery, Message, Update } from 'grammy/types';
import type { Logger } from 'pino';
import { describeChatError } from '../assistant/describe-chat-error.ts';
import { KeyedMutex } from '../assistant/keyed-mutex.ts';
import type { Clock } from '../reminders/clock.ts';
import { hashLinkCode } from '../reminders/link-code.ts';
import type { TelegramRepository } from '../storage/telegram-repository.ts';
import type { ChatDoor } from './chat-door.ts';
import type { ConversationDoor } from './conversation-door.ts';
import type { DocumentDoor } from './document-door.ts';
import type { Incoming } from './incoming.ts';
import type { ReminderDoor } from './reminder-door.ts';
import { sendReply } from './send-reply.ts';
import { callFailure, isNotModified, type TelegramApi } from './telegram-api.ts';
import { chatErrorText, type Language, languageOf, textsFor } from './telegram-texts.ts';
import { unreadableFields } from './update-shape.ts';

export interface TelegramChannelDependencies {
  telegram: TelegramApi;
  store: TelegramRepository;
  chat: ChatDoor;
  documents: DocumentDoor;
  reminders: ReminderDoor;
  conversations: ConversationDoor;
  clock: Clock;
  logger: Logger;
}

/** An unlinked chat is told how to link at most this often. */
const HINT_EVERY_SECONDS = 3_600;
/** Taken update ids are kept a week (Telegram keeps an update at most a day). */
const FORGET_UPDATES_AFTER_SECONDS = 7 * 24 * 3_600;
/** The updates Parley asks Telegram for (polling and webhook alike). */
export const ALLOWED_UPDATES = ['message', 'edited_message', 'callback_query'] as const;
const START = /^\/start(?:@\w+)?(?:\s+(\S+))?\s*$/;
const COMMAND = /^\/(\w+)(?:@\w+)?(?:\s|$)/;

/**
 * Telegram as a door to the assistant. Updates arrive from the poller or the webhook; each is
 * claimed in the database first (so a second delivery, to this replica or another, is
 * dropped), then handled in the background: one chat's messages in arrival order, chats in
 * parallel. Only private chats linked with a one-time code reach an assistant; groups and
 * channels are ignored.
 */
export class TelegramChannel {
  readonly #deps: TelegramChannelDependencies;
  readonly #order = new KeyedMutex();
  readonly #inFlight = new Set<Promise<void>>();
  #received = 0;

  constructor(deps: TelegramChannelDependencies) {
    this.#deps = deps;
  }

  /** Claims the updates and starts handling the new ones; resolves once they are claimed. */
  async receive(updates: readonly Update[]): Promise<void> {
    const { store, telegram, logger } = this.#deps;
    const receivedAt = performance.now();
    const fresh = await store.claimUpdates(
      telegram.botId,
      updates.map((update) => update.update_id),
    );
    for (const update of updates) {
      if (!fresh.has(update.update_id)) {
        logger.info({ updateId: update.update_id }, 'Telegram update already taken: skipped');
        continue;
      }
      const unreadable = unreadableFields(update);
      if (unreadable.length > 0) {
        logger.warn(
          { updateId: update.update_id, fields: unreadable.slice(0, 10) },
          'Telegram update of an unexpected shape: ignored',
        );
        continue;
      }
      this.#dispatch(update, receivedAt);
    }
    if (++this.#received % 1_000 === 0) {
      await store.forgetUpdates(FORGET_UPDATES_AFTER_SECONDS).catch(() => {});
    }
  }

  /** Resolves when every update taken so far has been handled (for shutdown and tests). */
  async drain(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  #dispatch(update: Update, receivedAt: number): void {
    const log = this.#deps.logger.child({ updateId: update.update_id });
    // Messages of one chat wait for each other; button presses do not wait for answers, only
    // for the chat's earlier presses (👍 then 👎 must end as 👎).
    const press = update.callback_query?.message?.chat.id;
    const chat = (update.message ?? update.edited_message)?.chat.id;
    const key = chat !== undefined ? String(chat) : press !== undefined ? `press:${press}` : '';
    const job = (async () => {
      const release = key === '' ? () => {} : await this.#order.acquire(key);
      try {
        await this.#handle(update, receivedAt, log);
      } catch (error) {
        log.error({ err: error, status: callFailure(error)?.status }, 'Telegram update failed');
        await this.#tellFailure(update.message, error);
      } finally {
        release();
      }
    })();
    this.#inFlight.add(job);
    void job.finally(() => this.#inFlight.delete(job));
  }

  async #handle(update: Update, receivedAt: number, log: Logger): Promise<void> {
    if (update.callback_query) return this.#button(update.callback_query, log);
    if (update.edited_message) return this.#edited(update.edited_message, log);
    const message = update.message;
    if (!message) return;
    if (message.chat.type !== 'private') {
      log.debug({ chatType: message.chat.type }, 'Telegram message outside a private chat ignored');
      return;
    }
    const chatId = message.chat.id;
    const language = languageOf(message.from?.language_code);
    const t = textsFor(language);
    const start = message.text ? START.exec(message.text) : null;
    if (start) return this.#link(chatId, start[1], language, log);

    const userId = await this.#deps.store.userOfChat(String(chatId));
    if (!userId) {
      if (await this.#deps.store.hintDue(String(chatId), HINT_EVERY_SECONDS)) {
        await this.reply(chatId, t.linkHint);
      }
      log.info('Telegram message from an unlinked chat: not answered');
      return;
    }
    const incoming: Incoming = { chatId, userId, language, receivedAt };
    const command = message.text ? COMMAND.exec(message.text)?.[1]?.toLowerCase() : undefined;
    switch (command) {
      case 'stop':
        await this.#deps.store.unlinkChat(String(chatId));
        log.info('Telegram chat unlinked');
        return this.reply(chatId, t.stopped);
      case 'new':
        return this.#deps.conversations.start(incoming);
      case 'chats':
        return this.#deps.conversations.list(incoming);
      case 'help':
        return this.reply(chatId, t.help);
      case 'reminders':
        return this.#deps.reminders.list(incoming);
    }
    await this.#message(message, incoming, log);
  }

  async #message(message: Message, incoming: Incoming, log: Logger): Promise<void> {
    const t = textsFor(incoming.language);
    if (message.text !== undefined) {
      return this.#deps.chat.answer(incoming, { message: message.text }, log);
    }
    if (message.photo?.length) {
      return this.#deps.chat.answer(
        incoming,
        { message: message.caption || t.photoQuestion, photo: message.photo },
        log,
      );
    }
    if (message.document) {
      return this.#deps.documents.ingest(incoming, message.document, log);
    }
    log.info('Telegram message of an unsupported kind');
    await this.reply(incoming.chatId, t.unsupported);
  }

  /**
   * An edit of a message already answered: answering again would add a second answer to a
   * conversation that already holds the first, so the user is told to send it anew instead of
   * waiting for an answer that never comes.
   */
  async #edited(message: Message, log: Logger): Promise<void> {
    if (message.chat.type !== 'private') return;
    if (!(await this.#deps.store.userOfChat(String(message.chat.id)))) return;
    log.info('Telegram message edited: not answered again');
    const t = textsFor(languageOf(message.from?.language_code));
    await this.reply(message.chat.id, t.editNotAnswered);
  }

  async #link(chatId: number, code: string | undefined, language: Language, log: Logger) {
    const t = textsFor(language);
    if (!code || !/^[A-Za-z0-9_-]{1,64}$/.test(code)) {
      return this.reply(chatId, t.startWithoutCode);
    }
    const { store, clock } = this.#deps;
    const userId = await store.linkChat(hashLinkCode(code), String(chatId), clock.now());
    log.info({ linked: userId !== undefined }, 'Telegram link attempt');
    await this.reply(chatId, userId === undefined ? t.codeUnknown : t.linked);
  }

  async #button(query: CallbackQuery, log: Logger): Promise<void> {
    const chatId = query.message?.chat.id;
    const language = languageOf(query.from.language_code);
    const answer = (text: string) =>
      this.#deps.telegram.reliable
        .answerCallbackQuery(query.id, { text })
        // Telegram refuses an answer after some 15 s (400 "query is too old"): the press was
        // still carried out, so this is a warning with the refusal's code, not an error.
        .catch((error: unknown) =>
          log.warn(
            { err: error, status: callFailure(error)?.status },
            'button press not acknowledged',
          ),
        );
    // A press whose work fails is still answered, so its button stops spinning.
    const answeredOnFailure = <T>(work: Promise<T>) =>
      work.catch(async (error: unknown) => {
        await answer(textsFor(language).busy);
        throw error;
      });
    // Finding the chat's user is such work too: when the database failed it, the press was
    // never answered and its button spun until Telegram gave up.
    const userId =
      chatId === undefined
        ? undefined
        : await answeredOnFailure(this.#deps.store.userOfChat(String(chatId)));
    if (!userId || chatId === undefined || query.from.id !== chatId) {
      return void (await answer(textsFor(language).feedbackGone));
    }
    const data = query.data ?? '';
    if (data.startsWith('c:')) {
      const conversations = this.#deps.conversations;
      return void (await answer(
        await answeredOnFailure(conversations.choose(userId, chatId, data.slice(2), language)),
      ));
    }
    if (data.startsWith('a:')) {
      const text = await answeredOnFailure(this.#deps.chat.decide(userId, data, language, log));
      await answer(text);
      // The question's buttons go: it is decided (or no longer open).
      const messageId = query.message?.message_id;
      if (messageId !== undefined) {
        await this.#deps.telegram.reliable
          .editMessageReplyMarkup(chatId, messageId, { reply_markup: { inline_keyboard: [] } })
          .catch((error: unknown) => {
            if (!isNotModified(error)) log.warn({ err: error }, 'approval buttons not removed');
          });
      }
      return;
    }
    if (data.startsWith('r:')) {
      const reminders = this.#deps.reminders;
      return void (await answer(
        await answeredOnFailure(reminders.cancel(userId, data.slice(2), language)),
      ));
    }
    const rated = await answeredOnFailure(this.#deps.chat.rate(userId, data, language, log));
    await answer(rated.text);
    const messageId = query.message?.message_id;
    if (rated.buttons && messageId !== undefined) {
      await this.#deps.telegram.reliable
        .editMessageReplyMarkup(chatId, messageId, { reply_markup: rated.buttons })
        .catch((error: unknown) => {
          // Pressing the chosen button again changes nothing on screen: Telegram says so.
          if (isNotModified(error)) return;
          log.warn({ err: error, status: callFailure(error)?.status }, 'choice not shown');
        });
    }
  }

  /**
   * A message whose handling failed before any answer was shown (the database busy or gone,
   * a lock that timed out) is told so, as /chat's client would be: silence reads as ignored.
   * A failure while an answer streams is shown by the answer itself (chat-door.ts).
   */
  async #tellFailure(message: Message | undefined, error: unknown): Promise<void> {
    if (message?.chat.type !== 'private') return;
    const language = languageOf(message.from?.language_code);
    await this.reply(message.chat.id, chatErrorText(language, describeChatError(error)));
  }

  reply(chatId: number, text: string): Promise<void> {
    return sendReply(this.#deps.telegram, chatId, text, this.#deps.logger);
  }
}

import type { Logger } from 'pino';
import type { ConversationService } from '../conversations/conversation-service.ts';
import { AppError } from '../errors.ts';
import { firstGraphemes } from '../first-characters.ts';
import { isUuid } from '../is-uuid.ts';
import type { TelegramRepository } from '../storage/telegram-repository.ts';
import type { Incoming } from './incoming.ts';
import { sendReply } from './send-reply.ts';
import type { TelegramApi } from './telegram-api.ts';
import { type Language, textsFor } from './telegram-texts.ts';

/** Conversations listed by /chats (one button each). */
const LISTED = 10;
/** Characters of a title on a button. */
const BUTTON_TITLE_CHARS = 40;

/**
 * `/new` and `/chats`: a Telegram chat keeps its own current conversation
 * (`telegram_chats.conversation_id`), so switching here does not move the web client's. Until
 * the chat picks one, it follows the user's shared current conversation.
 */
export class ConversationDoor {
  readonly #telegram: TelegramApi;
  readonly #conversations: ConversationService;
  readonly #store: Pick<TelegramRepository, 'conversationOf' | 'pointAt'>;
  readonly #logger: Logger;

  constructor(
    telegram: TelegramApi,
    conversations: ConversationService,
    store: Pick<TelegramRepository, 'conversationOf' | 'pointAt'>,
    logger: Logger,
  ) {
    this.#telegram = telegram;
    this.#conversations = conversations;
    this.#store = store;
    this.#logger = logger;
  }

  /** `/new`: a new conversation for this chat; the earlier ones stay. */
  async start(incoming: Incoming): Promise<void> {
    const created = await this.#conversations
      .create(incoming.userId, undefined, false)
      .catch((error: unknown) => {
        if (AppError.isInstance(error) && error.code === 'conversations_limit') return undefined;
        throw error;
      });
    if (!created) {
      const full = textsFor(incoming.language).conversationsFull(this.#conversations.perUser);
      return this.#reply(incoming.chatId, full);
    }
    await this.#store.pointAt(String(incoming.chatId), created.id);
    this.#logger.info({ conversationId: created.id }, 'Telegram conversation started');
    await this.#reply(incoming.chatId, textsFor(incoming.language).reset);
  }

  /** `/chats`: the latest conversations, pinned first, the one this chat continues marked. */
  async list(incoming: Incoming): Promise<void> {
    const t = textsFor(incoming.language);
    const [{ conversations }, own] = await Promise.all([
      this.#conversations.list(incoming.userId, undefined, LISTED),
      this.#store.conversationOf(String(incoming.chatId)),
    ]);
    if (conversations.length === 0) return this.#reply(incoming.chatId, t.noConversations);
    const here = own ?? conversations.find((c) => c.current)?.id;
    const lines = conversations.map(
      (c, i) =>
        `${i + 1}. ${c.pinned ? '📌 ' : ''}${c.title || t.untitled}${c.id === here ? ' ✓' : ''}`,
    );
    await sendReply(
      this.#telegram,
      incoming.chatId,
      [t.conversationsTitle, ...lines].join('\n'),
      this.#logger,
      {
        inline_keyboard: conversations.map((c, i) => [
          {
            text: `${i + 1}. ${firstGraphemes(c.title || t.untitled, BUTTON_TITLE_CHARS)}`,
            callback_data: `c:${c.id}`,
          },
        ]),
      },
    );
  }

  /** A `c:<id>` button: this chat continues that conversation. Returns the acknowledgement. */
  async choose(userId: string, chatId: number, id: string, language: Language): Promise<string> {
    const t = textsFor(language);
    // Button data comes from the client: anything but one of the user's conversations is gone.
    const conversation = isUuid(id) ? await this.#conversations.find(userId, id) : undefined;
    if (!conversation) return t.conversationGone;
    await this.#store.pointAt(String(chatId), conversation.id);
    return t.continuing(conversation.title || t.untitled);
  }

  #reply(chatId: number, text: string): Promise<void> {
    return sendReply(this.#telegram, chatId, text, this.#logger);
  }
}

import type { InlineKeyboardMarkup } from 'grammy/types';
import type { Logger } from 'pino';
import type { ChatEvent } from '../assistant/chat-events.ts';
import { type FinalWords, finalText } from './final-text.ts';
import { partMessage } from './part-message.ts';
import { splitMessage } from './split-message.ts';
import {
  type CallFailure,
  callFailure,
  grammySignal,
  isNotModified,
  isTextRefused,
  type TelegramApi,
} from './telegram-api.ts';

/**
 * Whether this bot's drafts work; switched off for the process when Telegram says they do not
 * (draftsUnavailable), not when it refuses one draft's text.
 */
export interface DraftSupport {
  enabled: boolean;
}

/**
 * Telegram's refusals of a draft that mean drafts do not work here: a Bot API server without
 * sendMessageDraft (404 "method not found") or Telegram's TEXTDRAFT_PEER_INVALID (drafts not
 * available for the bot or chat). Any other 400 is about that draft (its text), and the next
 * draft is tried: a 400 for a draft showing nothing switched drafts off for every chat.
 */
const draftsUnavailable = (failure: CallFailure) =>
  failure.status === 404 ||
  (failure.status === 400 && failure.description.includes('TEXTDRAFT_PEER_INVALID'));

export interface AnswerStreamOptions extends FinalWords {
  telegram: TelegramApi;
  chatId: number;
  /** Least time between two updates of the growing answer (Telegram: ~1 per second per chat). */
  intervalMs: number;
  drafts: DraftSupport;
  /** The 👍/👎 buttons for a finished answer's run. */
  buttons(runId: string): InlineKeyboardMarkup;
  logger: Logger;
  /** Stops waiting on Telegram (shutdown). */
  signal: AbortSignal;
  /** When the user's message arrived, for the time to the first draft. */
  receivedAt: number;
  /** The user's words for an error the assistant reported (default: its English message). */
  errorText?: (error: Extract<ChatEvent, { type: 'error' }>) => string;
}

export interface StreamedAnswer {
  runId: string | undefined;
  /** Milliseconds from the message's arrival to the first draft or message of the answer. */
  firstUpdateMs: number | undefined;
}

/** "typing…" lasts 5 s on the user's screen; renewed a little before it runs out. */
const TYPING_EVERY_MS = 4_000;

/**
 * Turns one answer's ChatEvents into Telegram messages. While the answer grows, the user sees
 * it as a draft (`sendMessageDraft`), updated at most once per `intervalMs`; where drafts are
 * refused, as a message (`sendMessage`) edited in place (`editMessageText`). The final text is
 * sent with `sendMessage` (drafts vanish; the Bot API needs the message), in parts of at most
 * 4,096 characters; parts complete before the end are sent as soon as they are complete.
 *
 * Only the latest text matters while growing: an update refused by a 429 is skipped, and the
 * next carries everything. Final messages wait out a 429 and are retried, so none is lost, and
 * one that Telegram refused was not sent, so none is doubled.
 */
export class AnswerStream {
  readonly #o: AnswerStreamOptions;
  #text = '';
  #error = '';
  #stopped = false;
  /** Parts sent for good. */
  #sealed = 0;
  /** Edit mode: the message showing the current part, and what it shows. */
  #editing: { messageId: number; shown: string } | undefined;
  #shownDraft = '';
  readonly #draftBase = 1 + Math.floor(Math.random() * 1_000_000_000);
  #inFlight: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastUpdateAt = 0;
  #firstUpdateMs: number | undefined;
  #typing: NodeJS.Timeout | undefined;

  constructor(options: AnswerStreamOptions) {
    this.#o = options;
  }

  async run(events: AsyncIterable<ChatEvent>): Promise<StreamedAnswer> {
    this.#startTyping();
    let runId: string | undefined;
    try {
      for await (const event of events) {
        if (event.type === 'text') {
          this.#stopTyping();
          this.#text += event.text;
          this.#schedule();
        } else if (event.type === 'error') {
          this.#error = this.#o.errorText?.(event) ?? event.message;
        } else if (event.type === 'done') {
          runId = event.runId;
          this.#stopped = event.stopped === true;
        } // reasoning is never sent to Telegram
      }
    } finally {
      this.#stopTyping();
      clearTimeout(this.#timer);
      this.#timer = undefined;
      await this.#inFlight;
    }
    await this.#finish(runId);
    return { runId, firstUpdateMs: this.#firstUpdateMs };
  }

  #startTyping(): void {
    const typing = () => {
      if (this.#o.telegram.gate.remainingMs() > 0) return;
      this.#o.telegram.bestEffort
        .sendChatAction(this.#o.chatId, 'typing')
        .catch((error: unknown) => this.#o.logger.debug({ err: error }, 'typing not shown'));
    };
    typing();
    this.#typing = setInterval(typing, TYPING_EVERY_MS);
  }

  #stopTyping(): void {
    clearInterval(this.#typing);
  }

  #schedule(): void {
    if (this.#inFlight || this.#timer) return;
    const wait = Math.max(
      this.#lastUpdateAt + this.#o.intervalMs - performance.now(),
      this.#o.telegram.gate.remainingMs(),
      0,
    );
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const before = this.#text;
      this.#inFlight = this.#update()
        .catch((error: unknown) => this.#o.logger.warn({ err: error }, 'answer update failed'))
        .finally(() => {
          this.#inFlight = undefined;
          this.#lastUpdateAt = performance.now();
          if (this.#text !== before) this.#schedule();
        });
    }, wait);
  }

  /** Shows the growing answer: earlier parts for good, the current one as a draft or edit. */
  async #update(): Promise<void> {
    const parts = splitMessage(this.#text);
    while (this.#sealed < parts.length - 1) {
      await this.#sendFinal(parts[this.#sealed] ?? '', undefined);
      this.#sealed++;
    }
    const current = parts.at(-1) ?? '';
    if (!current.trim()) return;
    if (this.#o.drafts.enabled && (await this.#draft(current))) return;
    await this.#edit(current);
  }

  /** True when the draft was shown or skipped; false when drafts do not work here. */
  async #draft(text: string): Promise<boolean> {
    if (text === this.#shownDraft) return true;
    const api = this.#o.telegram.bestEffort;
    const draftId = this.#draftBase + this.#sealed;
    const message = partMessage(text);
    // Nothing to show yet (the answer opens with a code fence): the next update will have some.
    if (message.blank) return true;
    try {
      try {
        await api.sendMessageDraft(this.#o.chatId, draftId, message.text, {
          ...(message.html ? { parse_mode: 'HTML' as const } : {}),
        });
      } catch (error) {
        if (!message.html || !isTextRefused(error)) throw error;
        await api.sendMessageDraft(this.#o.chatId, draftId, text);
      }
      this.#shownDraft = text;
      this.#shown();
      return true;
    } catch (error) {
      const failure = callFailure(error);
      if (failure?.status === 429 || failure?.status === undefined) return true; // next time
      if (draftsUnavailable(failure)) {
        this.#o.drafts.enabled = false;
        this.#o.logger.info(
          { status: failure.status, reason: failure.description },
          'Telegram refused a draft: answers stream by editing a message instead',
        );
        return false;
      }
      if (failure.status === 400) {
        this.#o.logger.warn({ status: 400, reason: failure.description }, 'draft refused: skipped');
        return true;
      }
      throw error;
    }
  }

  async #edit(text: string): Promise<void> {
    const api = this.#o.telegram.bestEffort;
    const { chatId } = this.#o;
    try {
      if (!this.#editing) {
        const sent = await api.sendMessage(chatId, text);
        this.#editing = { messageId: sent.message_id, shown: text };
      } else if (this.#editing.shown !== text) {
        await api.editMessageText(chatId, this.#editing.messageId, text);
        this.#editing.shown = text;
      }
      this.#shown();
    } catch (error) {
      if (isNotModified(error)) return;
      const status = callFailure(error)?.status;
      if (status === 429 || status === undefined) return; // the next update carries the text
      throw error;
    }
  }

  #shown(): void {
    this.#firstUpdateMs ??= Math.round(performance.now() - this.#o.receivedAt);
  }

  async #finish(runId: string | undefined): Promise<void> {
    const text = finalText(this.#text, { error: this.#error, stopped: this.#stopped }, this.#o);
    const parts = splitMessage(text);
    for (; this.#sealed < parts.length; this.#sealed++) {
      const last = this.#sealed === parts.length - 1;
      const buttons = last && runId && this.#text.trim() ? this.#o.buttons(runId) : undefined;
      await this.#sendFinal(parts[this.#sealed] ?? '', buttons);
    }
  }

  /** A part for good: sent (or, in edit mode, its message edited), waiting out any 429. */
  async #sendFinal(part: string, buttons: InlineKeyboardMarkup | undefined): Promise<void> {
    const api = this.#o.telegram.reliable;
    const { chatId } = this.#o;
    const signal = grammySignal(this.#o.signal);
    const markup = buttons ? { reply_markup: buttons } : {};
    const editing = this.#editing;
    this.#editing = undefined;
    this.#shownDraft = '';
    const send = async (text: string, html: boolean) => {
      const other = { ...markup, ...(html ? { parse_mode: 'HTML' as const } : {}) };
      if (editing) {
        try {
          await api.editMessageText(chatId, editing.messageId, text, other, signal);
        } catch (error) {
          if (!isNotModified(error)) throw error;
        }
      } else {
        await api.sendMessage(
          chatId,
          text,
          { ...other, link_preview_options: { is_disabled: true } },
          signal,
        );
      }
    };
    const message = partMessage(part);
    try {
      await send(message.text, message.html);
    } catch (error) {
      if (!message.html || !isTextRefused(error)) throw error;
      this.#o.logger.warn(
        { reason: callFailure(error)?.description },
        'Telegram refused the answer as HTML: sent as plain text',
      );
      await send(part, false);
    }
    this.#shown();
  }
}

import { randomUUID } from 'node:crypto';
import type { InlineKeyboardMarkup, PhotoSize } from 'grammy/types';
import type { Logger } from 'pino';
import type { Principal } from '../accounts/principal.ts';
import type { ChatEvent } from '../assistant/chat-events.ts';
import type { ChatService } from '../assistant/chat-service.ts';
import { AppError } from '../errors.ts';
import type { FeedbackService } from '../feedback/feedback-service.ts';
import { characterCount, unitCut } from '../first-characters.ts';
import { disposeAfter } from '../http/chat-abort.ts';
import { isUuid } from '../is-uuid.ts';
import type { DetachedRuns, NumberedEvent } from '../runs/detached-runs.ts';
import type { ImageIntake, StoredImage } from '../vision/image-intake.ts';
import { detectImageType } from '../vision/image-type.ts';
import { AnswerStream, type DraftSupport } from './answer-stream.ts';
import { finalWordsOf } from './final-text.ts';
import type { Incoming } from './incoming.ts';
import { photoToRead } from './photo-to-read.ts';
import { overLimitText, sendReply } from './send-reply.ts';
import { callFailure, type TelegramApi } from './telegram-api.ts';
import { chatErrorText, type Language, textsFor } from './telegram-texts.ts';

export interface ChatDoorDependencies {
  telegram: TelegramApi;
  chats: Pick<ChatService, 'chat'>;
  /**
   * Where the answer runs: detached from the door, like a resumable /chat (one mechanism), so
   * it is bounded by ANSWER_MAX_SECONDS and shutdown, and can be followed and stopped by id.
   */
  runs: Pick<DetachedRuns, 'begin' | 'listen' | 'told'>;
  /**
   * The conversation a message of the chat goes to: the chat's own current one (`/new`,
   * `/chats`), else the user's shared one (made if they have none). Known before the answer
   * begins, so its run is registered there and other doors see it being written.
   */
  conversationOf(chatId: string, userId: string): Promise<string>;
  /** UsageLimits.admitChat: throws a 429 AppError over a limit. */
  admitChat(principal: Principal, userId: string): Promise<unknown>;
  feedback: FeedbackService;
  images: ImageIntake;
  imageMaxBytes: number;
  messageMaxChars: number;
  /** Least time between two updates of a growing answer. */
  streamIntervalMs: number;
  /** Aborted when the server stops and the grace period is over. */
  shutdown: AbortSignal;
  /** Records the user's decision on a tool call (McpRepository.decide); the chat waits on it. */
  decideApproval?: (
    userId: string,
    approvalId: string,
    decision: 'approve' | 'deny' | 'always',
  ) => Promise<'approve' | 'deny' | 'always' | 'expired' | undefined>;
}

/** What the user sent the assistant: text, and a photo (its sizes) whose caption is the text. */
export interface Question {
  message: string;
  photo?: readonly PhotoSize[] | undefined;
}

/** Feedback buttons: `f:<run id>:<score>`, well within Telegram's 64 bytes. */
const RATE = /^f:([^:]+):([01])$/;
/** Approval buttons: `a:<approval id>:<y|n|a>` (approve, deny, always). */
const DECIDE = /^a:([^:]+):([yna])$/;
const DECISIONS = { y: 'approve', n: 'deny', a: 'always' } as const;
/** Characters of a call's arguments shown in the question (a message holds 4,096). */
const ARGUMENTS_SHOWN = 3_000;

/**
 * Text and photos to the user's assistant, in the chat's conversation (the one `/chat` goes to
 * until `/new` or `/chats` picks another for this chat): the same
 * ChatService (so the same history, one chat at a time per user on every door and replica),
 * the same limits (as the user, like a key of theirs), the answer streamed back.
 */
export class ChatDoor {
  readonly #deps: ChatDoorDependencies;
  readonly #drafts: DraftSupport = { enabled: true };

  constructor(deps: ChatDoorDependencies) {
    this.#deps = deps;
  }

  async answer(incoming: Incoming, question: Question, log: Logger): Promise<void> {
    const { telegram, chats, shutdown } = this.#deps;
    const { chatId, userId, language } = incoming;
    const t = textsFor(language);
    const principal: Principal = { kind: 'user', userId, keyId: undefined };
    // As /chat refuses it (422): answering its first part would answer another question.
    if (characterCount(question.message) > this.#deps.messageMaxChars) {
      log.info('Telegram message over MESSAGE_MAX_CHARS');
      return sendReply(telegram, chatId, t.tooLong(this.#deps.messageMaxChars), log);
    }
    try {
      await this.#deps.admitChat(principal, userId);
    } catch (error) {
      const refusal = overLimitText(error, language);
      if (!refusal) throw error;
      log.info('Telegram chat over a limit');
      return sendReply(telegram, chatId, refusal, log);
    }
    let image: StoredImage | undefined;
    const photo = question.photo && photoToRead(question.photo, this.#deps.imageMaxBytes);
    if (photo) {
      image = await this.#savePhoto(photo, chatId, language, log);
      if (!image) return;
    }
    // Final messages still go out for a few seconds after the answer was stopped.
    const sending = new AbortController();
    const stop = () => setTimeout(() => sending.abort(), 5_000).unref();
    if (shutdown.aborted) stop();
    else shutdown.addEventListener('abort', stop, { once: true });
    let begun = false;
    let delivered = false;
    const runId = randomUUID();
    try {
      const conversationId = await this.#deps.conversationOf(String(chatId), userId);
      // PostgreSQL cannot store U+0000.
      const message = question.message.replaceAll('\u0000', '\uFFFD');
      await this.#deps.runs.begin(
        {
          runId,
          userId,
          turn: { question: message, conversationId, telegramChat: { chatId, language } },
        },
        (signal) => {
          const answer = chats.chat(
            {
              runId,
              userId,
              conversationId,
              message,
              showThinking: false,
              image,
              // The chat can show buttons: a tool call that needs the user's decision asks here.
              approvals: this.#deps.decideApproval ? 'ask' : 'refuse',
            },
            signal,
          );
          // The photo goes when the answer is over, however it ends.
          return image ? disposeAfter(answer, image.dispose) : answer;
        },
      );
      begun = true;
      const numbered = await this.#deps.runs.listen(runId, userId, 0, sending.signal, {
        bounded: false,
      });
      if (!numbered) throw new Error('a run just begun was not found');
      const stream = new AnswerStream({
        telegram,
        chatId,
        intervalMs: this.#deps.streamIntervalMs,
        drafts: this.#drafts,
        buttons: rateButtons,
        ...finalWordsOf(t),
        logger: log,
        signal: AbortSignal.any([sending.signal, AbortSignal.timeout(30 * 60_000)]),
        receivedAt: incoming.receivedAt,
        errorText: (error) => chatErrorText(language, error),
      });
      let sent: Awaited<ReturnType<AnswerStream['run']>>;
      try {
        sent = await stream.run(this.#asking(eventsOf(numbered), chatId, language, log));
      } catch (error) {
        // Part of the answer may be on the screen: a failure line after it would be a second
        // message out of place. Logged; the answer is stored whatever the chat shows.
        log.error(
          { err: error, status: callFailure(error)?.status },
          'Telegram answer not delivered',
        );
        return;
      }
      delivered = true;
      // Noted before it is logged: once the line is there, no other process sends it again.
      await this.#deps.runs.told(runId);
      log.info(
        { runId: sent.runId, firstUpdateMs: sent.firstUpdateMs, drafts: this.#drafts.enabled },
        'Telegram answer sent',
      );
    } finally {
      shutdown.removeEventListener('abort', stop);
      if (!begun) await image?.dispose();
      // Refused by Telegram or failed, it is over. Cut short by shutdown, the run stays untold:
      // the next process sends the stored answer (untold-answers.ts).
      if (begun && !delivered && !sending.signal.aborted) await this.#deps.runs.told(runId);
    }
  }

  /**
   * A 👍/👎 press: the user's rating of that answer's run, forwarded like POST /feedback;
   * pressing again changes it. Returns the acknowledgement and, once recorded, the buttons
   * with the choice marked.
   */
  async rate(userId: string, data: string, language: Language, log: Logger): Promise<Rated> {
    const t = textsFor(language);
    const match = RATE.exec(data);
    // The data is the client's to send: a run id that is not one is gone, never a query.
    if (!match?.[1] || !isUuid(match[1])) return { text: t.feedbackGone };
    const runId = match[1];
    const score = Number(match[2]) as 0 | 1;
    try {
      await this.#deps.feedback.press({ runId, score, key: 'user_score', userId });
      log.info({ runId }, 'Telegram feedback recorded');
      return { text: t.thanks, buttons: rateButtons(runId, score) };
    } catch (error) {
      if (AppError.isInstance(error) && error.status === 404) return { text: t.feedbackGone };
      throw error;
    }
  }

  /**
   * A press of Approve, Deny or Always allow under a tool call's question: the decision goes
   * to the database, where the waiting answer (on any replica) reads it.
   */
  async decide(userId: string, data: string, language: Language, log: Logger): Promise<string> {
    const t = textsFor(language);
    const match = DECIDE.exec(data);
    if (!match?.[1] || !isUuid(match[1]) || !this.#deps.decideApproval) return t.approvalGone;
    const decided = await this.#deps.decideApproval(
      userId,
      match[1],
      DECISIONS[match[2] as keyof typeof DECISIONS],
    );
    log.info({ decision: decided ?? 'unknown' }, 'Telegram approval decided');
    return decided ? t.approvalDecided[decided] : t.approvalGone;
  }

  /** Passes the answer's events on; a tool call's question is sent as a message with buttons. */
  async *#asking(
    events: AsyncIterable<ChatEvent>,
    chatId: number,
    language: Language,
    log: Logger,
  ): AsyncGenerator<ChatEvent> {
    const t = textsFor(language);
    for await (const event of events) {
      if (event.type === 'approval') {
        const { id, server, tool } = event.approval;
        const args = JSON.stringify(event.approval.arguments, null, 2) ?? '';
        // Cut in UTF-16 units, as Telegram counts its limit, but never inside an emoji: half
        // a surrogate pair is not UTF-8, and Telegram refused the question.
        const shown =
          args.length > ARGUMENTS_SHOWN
            ? `${args.slice(0, unitCut(args, ARGUMENTS_SHOWN))}…`
            : args;
        await sendReply(this.#deps.telegram, chatId, t.approvalQuestion(tool, server, shown), log, {
          inline_keyboard: [
            [
              { text: t.approve, callback_data: `a:${id}:y` },
              { text: t.deny, callback_data: `a:${id}:n` },
            ],
            [{ text: t.alwaysAllow, callback_data: `a:${id}:a` }],
          ],
        });
        continue;
      }
      if (event.type === 'approval-decided') continue; // the press was answered already
      yield event;
    }
  }

  async #savePhoto(
    photo: PhotoSize,
    chatId: number,
    language: Language,
    log: Logger,
  ): Promise<StoredImage | undefined> {
    const { telegram, images, imageMaxBytes } = this.#deps;
    const t = textsFor(language);
    if (images.refusal) {
      await sendReply(telegram, chatId, t.imagesOff, log);
      return undefined;
    }
    if ((photo.file_size ?? 0) > imageMaxBytes) {
      await sendReply(telegram, chatId, t.tooBig(Math.floor(imageMaxBytes / 1_048_576)), log);
      return undefined;
    }
    const file = await telegram.reliable.getFile(photo.file_id);
    if (!file.file_path) throw new Error('getFile named no file_path');
    const bytes = await telegram.download(file.file_path, imageMaxBytes, file.file_size);
    const mediaType = detectImageType(bytes);
    if (!mediaType) {
      await sendReply(telegram, chatId, t.unsupported, log);
      return undefined;
    }
    return images.save(bytes, mediaType);
  }
}

/** What a press is answered with, and the answer's buttons as they should now look. */
export interface Rated {
  text: string;
  buttons?: InlineKeyboardMarkup | undefined;
}

/** The 👍 / 👎 under an answer; the user's current choice, if any, is marked with ✓. */
export const rateButtons = (runId: string, chosen?: 0 | 1): InlineKeyboardMarkup => ({
  inline_keyboard: [
    [
      { text: chosen === 1 ? '👍 ✓' : '👍', callback_data: `f:${runId}:1` },
      { text: chosen === 0 ? '👎 ✓' : '👎', callback_data: `f:${runId}:0` },
    ],
  ],
});

/** A run's events without their numbers (Telegram has no use for them). */
async function* eventsOf(numbered: AsyncIterable<NumberedEvent>): AsyncGenerator<ChatEvent> {
  for await (const { event } of numbered) yield event;
}

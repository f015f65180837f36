import type { Logger } from 'pino';
import { questionTitle } from '../conversations/question-title.ts';
import { withoutThinking } from '../models/think-tags.ts';
import type { AbandonedTurn } from '../runs/abandoned-runs.ts';
import { sendMarkdown } from './send-markdown.ts';
import { splitMessage } from './split-message.ts';
import { callFailure, type TelegramApi } from './telegram-api.ts';
import { languageOf, textsFor } from './telegram-texts.ts';

/** Longest the message may take (it waits out a 429); the sweep that found the run waits on it. */
const SEND_TIMEOUT_MS = 15_000;

/**
 * Tells a Telegram chat that the answer it was being written died with its process (found by
 * whichever process ended the run: the restarted one, or another replica). The chat saw the
 * answer grow as a draft, which vanishes, and no final message came: it gets the answer as far
 * as it was stored, then why it stopped, as an answer that ends with an error looks. Only the
 * answer's last part is sent: a longer answer's earlier parts went out for good as it grew.
 * Best effort: a failure is logged by its status, never with the words.
 */
export function tellInterruptedChats(telegram: TelegramApi, logger: Logger, shutdown: AbortSignal) {
  return async ({ runId, turn, text }: AbandonedTurn): Promise<void> => {
    const chat = turn?.telegramChat;
    if (!chat) return;
    const t = textsFor(languageOf(chat.language));
    const question = questionTitle(turn.question);
    const answer = splitMessage(withoutThinking(text).trim()).at(-1) ?? '';
    const message = answer
      ? `${answer}\n\n⚠️ ${t.interrupted(question)}`
      : `⚠️ ${t.interruptedEmpty(question)}`;
    try {
      await sendMarkdown(
        telegram,
        String(chat.chatId),
        message,
        // Never past the grace period: the process's close waits for the sweep that called this.
        AbortSignal.any([AbortSignal.timeout(SEND_TIMEOUT_MS), shutdown]),
        logger,
      );
      logger.info({ runId, code: 'run_interrupted' }, 'Telegram chat told of its cut-off answer');
    } catch (error) {
      logger.warn(
        { runId, code: 'interruption_not_told', status: callFailure(error)?.status },
        'Telegram chat not told of its cut-off answer',
      );
    }
  };
}

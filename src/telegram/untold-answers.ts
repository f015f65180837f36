import type { Logger } from 'pino';
import type { PendingTurn } from '../runs/abandoned-runs.ts';
import type { UntoldRun } from '../storage/run-event-repository.ts';
import { rateButtons } from './chat-door.ts';
import { finalText, finalWordsOf } from './final-text.ts';
import { sendMarkdown } from './send-markdown.ts';
import { splitMessage } from './split-message.ts';
import { callFailure, type TelegramApi } from './telegram-api.ts';
import { chatErrorText, languageOf, textsFor } from './telegram-texts.ts';

/**
 * Sends a Telegram chat the final message of an answer that was stored but whose holder died
 * before the message went out (found by whichever process takes the run over: the restarted
 * one, or another replica). It reads as the holder would have sent it: the answer (its last
 * part: a longer answer's earlier parts went out as it grew), the run's error or stop, and the
 * 👍/👎 buttons. Answers whether the run is done with: sent, or refused by Telegram for good
 * (a blocked bot); a failure that may pass (network, 429, 5xx) leaves it for a later sweep.
 * Logged by code and status, never with the words.
 */
export function tellUntoldAnswers(
  telegram: TelegramApi,
  logger: Logger,
  shutdown: AbortSignal,
  /** Less than a holder's silence that gets a run taken over: another replica would send it too. */
  timeoutMs: number,
) {
  return async ({ runId, turn, answer, error, stopped }: UntoldRun): Promise<boolean> => {
    const chat = turn === undefined ? undefined : (JSON.parse(turn) as PendingTurn).telegramChat;
    if (!chat) return true;
    const language = languageOf(chat.language);
    const t = textsFor(language);
    const text = finalText(
      answer,
      { error: error && chatErrorText(language, error), stopped },
      finalWordsOf(t),
    );
    const last = splitMessage(text).at(-1) ?? text;
    try {
      await sendMarkdown(
        telegram,
        String(chat.chatId),
        last,
        // Never past the grace period: the process's close waits for the sweep that called this.
        AbortSignal.any([AbortSignal.timeout(timeoutMs), shutdown]),
        logger,
        answer.trim() ? rateButtons(runId) : undefined,
      );
      logger.info(
        { runId, code: 'answer_sent_late' },
        'Telegram answer sent after its holder died',
      );
      return true;
    } catch (failure) {
      const status = callFailure(failure)?.status;
      logger.warn(
        { runId, code: 'answer_not_sent', status },
        'Telegram answer of a dead holder not sent',
      );
      return status !== undefined && status !== 429 && status < 500;
    }
  };
}

/** What an answer's final message says besides the answer itself, in the chat's language. */
export interface FinalWords {
  /** Said when an answer is empty. */
  noAnswer: string;
  /**
   * Said after an answer its owner stopped from another door (the web client's Stop): without
   * it, what was written would look like the whole answer. `empty`: nothing was written.
   */
  stopped: { written: string; empty: string };
}

/**
 * The whole text of an answer's final message: the answer, then why it ended early (the
 * error's words, or that it was stopped), or that there was no answer. One place for it, so an
 * answer sent late (its holder died: untold-answers.ts) reads as the live one would have.
 */
export function finalText(
  answer: string,
  end: { error: string | undefined; stopped: boolean },
  words: FinalWords,
): string {
  const text = answer.trim() ? answer : '';
  if (end.error) return text ? `${text}\n\n⚠️ ${end.error}` : `⚠️ ${end.error}`;
  if (end.stopped) {
    return text ? `${text}\n\n⏹ ${words.stopped.written}` : `⏹ ${words.stopped.empty}`;
  }
  return text || words.noAnswer;
}

/** The final message's words of a language's texts (telegram-texts.ts). */
export const finalWordsOf = (t: {
  noAnswer: string;
  answerStopped: string;
  answerStoppedEmpty: string;
}): FinalWords => ({
  noAnswer: t.noAnswer,
  stopped: { written: t.answerStopped, empty: t.answerStoppedEmpty },
});

import { characterCount, firstGraphemes } from '../first-characters.ts';
import { hasVisibleCharacter } from '../visible-text.ts';

/** The longest title a conversation has, written by anyone. */
export const TITLE_MAX_CHARS = 60;

/**
 * A conversation's title until the model writes one: the question's first words, whitespace
 * collapsed, cut at a word's end when it is longer than TITLE_MAX_CHARS (with an ellipsis).
 */
export function questionTitle(question: string): string {
  const words = question.replace(/\s+/gu, ' ').trim();
  // Nothing visible (an image sent alone, zero-width spaces): no title, so the list shows its
  // placeholder rather than a blank line.
  if (!hasVisibleCharacter(words)) return '';
  if (characterCount(words) <= TITLE_MAX_CHARS) return words;
  const cut = firstGraphemes(words, TITLE_MAX_CHARS - 1);
  const space = cut.lastIndexOf(' ');
  return `${space >= 20 ? cut.slice(0, space) : cut}…`;
}

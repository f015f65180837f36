/** Characters of a snippet on each side of the first word found. */
const CONTEXT_CHARS = 60;

/**
 * The part of a text around the first place a search word occurs, whitespace collapsed, with
 * an ellipsis where it was cut; the text's start when no word is found as such (a match by
 * prefix or bigram the search found in the index but this simple look does not).
 */
export function snippetOf(text: string, search: string): string {
  const flat = text.replace(/\s+/gu, ' ').trim();
  const lower = sameLengthLowerCase(flat);
  let at = -1;
  for (const [word] of search
    .normalize('NFKC')
    .toLowerCase()
    .matchAll(/[\p{L}\p{N}\p{M}]+/gu)) {
    const found = lower.indexOf(word);
    if (found >= 0 && (at < 0 || found < at)) at = found;
  }
  // Never between the two halves of a character outside the BMP (an emoji): half of one
  // reads as U+FFFD.
  const start = whole(flat, Math.max(0, at - CONTEXT_CHARS), 1);
  const end = whole(flat, Math.min(flat.length, Math.max(at, 0) + CONTEXT_CHARS * 2), -1);
  return `${start > 0 ? '…' : ''}${flat.slice(start, end)}${end < flat.length ? '…' : ''}`;
}

/**
 * The text lower-cased with every position kept: a few letters lower-case longer ("İ" to "i̇"),
 * which would shift every place found after them; those stay as they are.
 */
function sameLengthLowerCase(text: string): string {
  const lower = text.toLowerCase();
  if (lower.length === text.length) return lower;
  let kept = '';
  for (const character of text) {
    const lowered = character.toLowerCase();
    kept += lowered.length === character.length ? lowered : character;
  }
  return kept;
}

/** `index`, or one unit towards `step` when it falls inside a surrogate pair. */
function whole(text: string, index: number, step: 1 | -1): number {
  const code = text.charCodeAt(index);
  return code >= 0xdc00 && code <= 0xdfff ? index + step : index;
}

/** Characters of a snippet on each side of the first word found. */
const CONTEXT_CHARS = 60;

/**
 * The part of a text around the first place a search word occurs, whitespace collapsed, with
 * an ellipsis where it was cut; the text's start when no word is found as such (a match by
 * prefix or bigram the search found in the index but this simple look does not).
 */
export function snippetOf(text: string, search: string): string {
  const flat = text.replace(/\s+/gu, ' ').trim();
  const lower = flat.toLowerCase();
  let at = -1;
  for (const [word] of search
    .normalize('NFKC')
    .toLowerCase()
    .matchAll(/[\p{L}\p{N}\p{M}]+/gu)) {
    const found = lower.indexOf(word);
    if (found >= 0 && (at < 0 || found < at)) at = found;
  }
  const start = Math.max(0, at - CONTEXT_CHARS);
  const end = Math.min(flat.length, Math.max(at, 0) + CONTEXT_CHARS * 2);
  return `${start > 0 ? '…' : ''}${flat.slice(start, end)}${end < flat.length ? '…' : ''}`;
}

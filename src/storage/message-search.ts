/**
 * The CJK half of a message's search terms, computed here as the message is stored instead of
 * by the database: `parley_search_vector()` (migration 0012) ran two SQL functions, a regular
 * expression and a sort for every stored message, ~0.4 ms of the embedded engine's CPU a chat
 * (bench/RESULTS.md, issue 31). The INSERT (RunRepository) adds the 'simple' configuration's
 * words itself; together they are exactly what `parley_search_vector(role, content)` gives,
 * which test/conversations/search-column.test.ts checks on both engines.
 */

/** The function's character ranges (Hangul Jamo, Kana, compatibility Jamo, Han, syllables). */
const CJK_RUN =
  /[\u1100-\u11FF\u3040-\u30FF\u3130-\u318F\u3400-\u4DBF\u4E00-\u9FFF\uAC00-\uD7A3]+/g;
/** The function reads the first 100,000 characters (code points) of a message. */
const MAX_CHARS = 100_000;

/**
 * The overlapping character bigrams of every CJK run of a message whose content is a string (a
 * lone character stays a unigram), distinct; null for any other message, whose terms the
 * database computes with the function itself (answers with tool calls, tool results).
 */
export function searchBigrams(message: { role: string; content: unknown }): string[] | null {
  if (typeof message.content !== 'string') return null;
  if (message.role !== 'user' && message.role !== 'assistant') return null;
  // `left(text, 100000)` counts code points; a string's length counts UTF-16 units.
  const text =
    message.content.length > MAX_CHARS
      ? Array.from(message.content).slice(0, MAX_CHARS).join('')
      : message.content;
  const bigrams = new Set<string>();
  // Every range is in the Basic Multilingual Plane: a run's UTF-16 units are its characters.
  for (const [run] of text.matchAll(CJK_RUN)) {
    if (run.length === 1) bigrams.add(run);
    for (let i = 0; i + 1 < run.length; i++) bigrams.add(run.slice(i, i + 2));
  }
  return [...bigrams];
}

/**
 * A message's search terms, computed here as the message is stored instead of by the
 * database: `parley_search_vector()` (migration 0012) ran two SQL functions, a regular
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

/** A question's or an answer's searchable text and the CJK half of its terms. */
export interface SearchTerms {
  /**
   * The text `parley_message_text(content)` reads, cut as the function cuts it (the INSERT
   * lower-cases it): a 4 MB answer sends its first 100,000 characters here, not all of it again.
   */
  text: string;
  /** The overlapping character bigrams of every CJK run (a lone character stays a unigram). */
  bigrams: string[];
}

/**
 * A message's search terms as `parley_search_vector(role, content)` would make them: null for
 * a tool result (no terms), and for a part whose text the function would read as other JSON
 * (the database then computes them with the function itself).
 */
export function searchTerms(message: { role: string; content: unknown }): SearchTerms | null {
  if (message.role !== 'user' && message.role !== 'assistant') return null;
  const text = messageText(message.content);
  if (text === null) return null;
  const read = firstCodePoints(text, MAX_CHARS);
  const bigrams = new Set<string>();
  // Every range is in the Basic Multilingual Plane: a run's UTF-16 units are its characters.
  for (const [run] of read.matchAll(CJK_RUN)) {
    if (run.length === 1) bigrams.add(run);
    for (let i = 0; i + 1 < run.length; i++) bigrams.add(run.slice(i, i + 2));
  }
  return { text: read, bigrams: [...bigrams] };
}

/**
 * `left(text, count)`: the first `count` code points (a string's length counts UTF-16 units).
 * Walks those alone: splitting a whole multi-megabyte answer into characters to keep the first
 * 100,000 held the event loop ~0.1 s a megabyte.
 */
function firstCodePoints(text: string, count: number): string {
  if (text.length <= count) return text;
  let end = 0;
  for (let taken = 0; taken < count && end < text.length; taken++) {
    end += (text.codePointAt(end) as number) > 0xffff ? 2 : 1;
  }
  return text.slice(0, end);
}

/**
 * `parley_message_text(content)` (migration 0012): a string content itself; of an array, the
 * text parts' texts joined by a space (parts without text are skipped, as string_agg skips
 * nulls); anything else ''. Null when a part's text is not a string (the function would read
 * its JSON, which only the database writes exactly alike).
 */
function messageText(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content as unknown[]) {
    if (typeof part !== 'object' || part === null) continue;
    const { type, text } = part as { type?: unknown; text?: unknown };
    if (type !== 'text' || text === undefined || text === null) continue;
    if (typeof text !== 'string') return null;
    texts.push(text);
  }
  return texts.join(' ');
}

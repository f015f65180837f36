import { STOP_WORDS } from '../documents/lexical-terms.ts';

/** The longest search a user may type. */
export const SEARCH_MAX_CHARS = 200;
/** Words of a search used at most; more would only slow it. */
const MAX_TERMS = 16;

const CJK = '\\p{Script=Hangul}\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}';
const WORD = /[\p{L}\p{N}\p{M}]+/gu;
const HAS_CJK = new RegExp(`[${CJK}]`, 'u');
const CJK_RUN = new RegExp(`[${CJK}]+`, 'gu');
const OTHER_RUN = new RegExp(`[^${CJK}]+`, 'gu');
/** What the index's parser keeps apart from a token: punctuation around it, a URL's scheme. */
const EDGES = /^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu;
const SCHEME = /^[a-z][a-z\d+.-]*:\/\//u;

/**
 * A user's search words as a tsquery (its input syntax, so no parser stands between them and
 * the index): every term must match. A word outside CJK scripts matches any word it starts
 * ("lease" finds "leases"); a run of Hangul, Han or Kana matches through its character
 * bigrams, as the index stores them (migration 0012), so "계약서" finds "계약서를". English
 * stop-words are dropped unless nothing else is left. Undefined when there is nothing to find.
 *
 * A token with punctuation inside ("report.pdf", "3.5", "kim@example.com") is one word to the
 * index's parser, which keeps it whole (and not its pieces): it matches whole, or as its words
 * when the parser split it ("e-mail", "don't").
 */
export function searchQuery(text: string): string | undefined {
  const terms: string[] = [];
  const stopWords: string[] = [];
  for (const token of text.normalize('NFKC').toLowerCase().split(/\s+/u)) {
    const words = wordsOf(token);
    const whole = token.replace(SCHEME, '').replace(EDGES, '');
    if (words.cjk.length > 0 || words.other.length < 2 || HAS_CJK.test(whole)) {
      terms.push(...words.cjk);
      for (const word of words.other) (STOP_WORDS.has(word) ? stopWords : terms).push(prefix(word));
      continue;
    }
    const pieces = words.other.filter((word) => !STOP_WORDS.has(word));
    const split = (pieces.length > 0 ? pieces : words.other).map(prefix).join(' & ');
    terms.push(`(${prefix(whole)} | ${split})`);
  }
  const chosen = [...new Set(terms.length > 0 ? terms : stopWords)].slice(0, MAX_TERMS);
  return chosen.length > 0 ? chosen.join(' & ') : undefined;
}

/** A token's CJK bigrams (a lone character stays itself) and its other words. */
function wordsOf(token: string): { cjk: string[]; other: string[] } {
  const cjk: string[] = [];
  const other: string[] = [];
  for (const [word] of token.matchAll(WORD)) {
    for (const [run] of word.matchAll(CJK_RUN)) {
      const chars = [...run];
      if (chars.length === 1) cjk.push(quoted(run));
      for (let i = 0; i + 1 < chars.length; i++) cjk.push(quoted(`${chars[i]}${chars[i + 1]}`));
    }
    for (const [run] of word.matchAll(OTHER_RUN)) other.push(run);
  }
  return { cjk, other };
}

const prefix = (word: string) => `${quoted(word)}:*`;
const quoted = (lexeme: string) => `'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;

import { STOP_WORDS } from '../documents/lexical-terms.ts';

/** The longest search a user may type. */
export const SEARCH_MAX_CHARS = 200;
/** Words of a search used at most; more would only slow it. */
const MAX_TERMS = 16;

const CJK = '\\p{Script=Hangul}\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}';
const WORD = /[\p{L}\p{N}\p{M}]+/gu;
const CJK_RUN = new RegExp(`[${CJK}]+`, 'gu');
const OTHER_RUN = new RegExp(`[^${CJK}]+`, 'gu');

/**
 * A user's search words as a tsquery (its input syntax, so no parser stands between them and
 * the index): every term must match. A word outside CJK scripts matches any word it starts
 * ("lease" finds "leases"); a run of Hangul, Han or Kana matches through its character
 * bigrams, as the index stores them (migration 0012), so "계약서" finds "계약서를". English
 * stop-words are dropped unless nothing else is left. Undefined when there is nothing to find.
 */
export function searchQuery(text: string): string | undefined {
  const terms: string[] = [];
  const stopWords: string[] = [];
  for (const [word] of text.normalize('NFKC').toLowerCase().matchAll(WORD)) {
    for (const [run] of word.matchAll(CJK_RUN)) {
      const chars = [...run];
      if (chars.length === 1) terms.push(quoted(run));
      for (let i = 0; i + 1 < chars.length; i++) terms.push(quoted(`${chars[i]}${chars[i + 1]}`));
    }
    for (const [run] of word.matchAll(OTHER_RUN)) {
      (STOP_WORDS.has(run) ? stopWords : terms).push(`${quoted(run)}:*`);
    }
  }
  const chosen = [...new Set(terms.length > 0 ? terms : stopWords)].slice(0, MAX_TERMS);
  return chosen.length > 0 ? chosen.join(' & ') : undefined;
}

const quoted = (lexeme: string) => `'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;

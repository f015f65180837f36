import { stemmer } from 'stemmer';

/**
 * The terms a text is indexed and searched by, for BM25 (see bench/RESULTS.md for why these).
 *
 * - Text is NFKC-normalised and lower-cased, then cut into runs of letters and digits.
 * - Latin and other space-separated scripts: English stop-words dropped, words stemmed
 *   (Porter), so "mutations" finds "mutation".
 * - Hangul, Han and Kana: overlapping character bigrams (a lone character stays a unigram).
 *   Korean attaches particles to words (`서울에서`, `서울의`); bigrams share `서울` between
 *   both forms, where whitespace tokens would not match at all.
 * - A term is at most MAX_TERM_CHARS characters, its start kept: a gene sequence, a dump or
 *   a page whose spaces were lost is one "word" thousands of letters long, and a term is a
 *   key of the index's B-tree, whose rows hold at most 2,704 bytes (such a document was a 500).
 */
export function lexicalTerms(text: string): string[] {
  const terms: string[] = [];
  for (const [word] of text.normalize('NFKC').toLowerCase().matchAll(WORD)) {
    for (const [run] of word.matchAll(SCRIPT_RUN)) {
      if (CJK_START.test(run)) pushBigrams(run, terms);
      else if (!STOP_WORDS.has(run)) terms.push(clip(LATIN_WORD.test(run) ? stemmer(run) : run));
    }
  }
  return terms;
}

/** Counts of each term, in first-seen order. */
export function termFrequencies(terms: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
  return counts;
}

const WORD = /[\p{L}\p{N}\p{M}]+/gu;
const CJK = '\\p{Script=Hangul}\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}';
/** Splits a word where it changes between CJK and other scripts ("GPT로" → "gpt", "로"). */
const SCRIPT_RUN = new RegExp(`[${CJK}]+|[^${CJK}]+`, 'gu');
const CJK_START = new RegExp(`^[${CJK}]`, 'u');
const LATIN_WORD = /^[a-z]+$/;
/** Longest term kept (4 bytes a character at most: 400 bytes), far above any real word. */
const MAX_TERM_CHARS = 100;

/** The first MAX_TERM_CHARS code points (a surrogate pair is never cut). */
function clip(term: string): string {
  return term.length <= MAX_TERM_CHARS ? term : [...term].slice(0, MAX_TERM_CHARS).join('');
}

function pushBigrams(run: string, terms: string[]): void {
  const chars = [...run];
  if (chars.length === 1) {
    terms.push(run);
    return;
  }
  for (let i = 0; i + 1 < chars.length; i++) terms.push(`${chars[i]}${chars[i + 1]}`);
}

/** English stop-words (the NLTK list), shared with the BM25 baseline of the benchmark. */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'i me my myself we our ours ourselves you your yours yourself yourselves he him his himself ' +
    'she her hers herself it its itself they them their theirs themselves what which who whom ' +
    'this that these those am is are was were be been being have has had having do does did ' +
    'doing a an the and but if or because as until while of at by for with about against ' +
    'between into through during before after above below to from up down in out on off over ' +
    'under again further then once here there when where why how all any both each few more ' +
    'most other some such no nor not only own same so than too very s t can will just don ' +
    'should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn ' +
    'mustn needn shan shouldn wasn weren won wouldn'
  ).split(' '),
);

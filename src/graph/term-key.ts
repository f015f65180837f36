/** Longest subject, relation or object kept. */
export const TERM_MAX_CHARS = 200;

/**
 * The key a term is stored and de-duplicated by: NFKC (full-width letters, compatibility
 * forms and decomposed Hangul become one form), trimmed, inner spaces collapsed, case-folded.
 */
export function termKey(term: string): string {
  return term.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();
}

/**
 * Korean particles often left on a name ("서울에서", "민수는"), longest first. Stripped only when
 * at least two characters remain, so short words ("나이") keep their last syllable.
 */
const PARTICLES = [
  '에서는',
  '으로는',
  '이랑',
  '에서',
  '에게',
  '한테',
  '께서',
  '으로',
  '까지',
  '부터',
  '처럼',
  '보다',
  '은',
  '는',
  '이',
  '가',
  '을',
  '를',
  '의',
  '에',
  '와',
  '과',
  '랑',
  '도',
  '로',
  '만',
];

/**
 * The form names are matched by in `query_entity` and the prompt summary: the key without
 * spaces and without a trailing Korean particle. Cheap, and tolerant of "New York" vs
 * "newyork" or "서울에서" vs "서울".
 */
export function matchKey(term: string): string {
  const key = termKey(term).replace(/ /g, '');
  for (const particle of PARTICLES) {
    if (key.length - particle.length >= 2 && key.endsWith(particle)) {
      return key.slice(0, -particle.length);
    }
  }
  return key;
}

/**
 * The first `max` characters of a text, counted as a person counts them (code points, as the
 * HTTP schemas' length limits count): never half of a surrogate pair. `slice` counts UTF-16
 * units and can cut an emoji in two, leaving a lone surrogate that reads as U+FFFD, or that a
 * model server refuses in its JSON.
 */
export function firstCharacters(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = 0;
  for (let count = 0; count < max && end < text.length; count++) {
    end += isPairAt(text, end) ? 2 : 1;
  }
  return text.slice(0, end);
}

/**
 * How many characters a text has, counted as `firstCharacters` and the HTTP schemas count them
 * (code points: an emoji is one, not the two UTF-16 units `length` says), so that every door
 * holds a limit such as MESSAGE_MAX_CHARS alike.
 */
export function characterCount(text: string): number {
  let count = text.length;
  for (let index = 0; index < text.length - 1; index++) {
    if (isPairAt(text, index)) {
      count--;
      index++;
    }
  }
  return count;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * The longest start of a text of at most `max` characters (code points, as `firstCharacters`)
 * that ends between two graphemes, what a reader sees as one character: a flag (two code
 * points), a family emoji (joined ones) or a letter with its accent stays whole or goes whole.
 */
export function firstGraphemes(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = 0;
  let count = 0;
  for (const { segment } of graphemes.segment(text)) {
    count += characterCount(segment);
    if (count > max) break;
    end += segment.length;
  }
  return text.slice(0, end);
}

const isPairAt = (text: string, index: number) =>
  (text.charCodeAt(index) & 0xfc00) === 0xd800 && (text.charCodeAt(index + 1) & 0xfc00) === 0xdc00;

/**
 * Where to cut a text to at most `max` UTF-16 units (Telegram counts its limits so) without
 * splitting an emoji: `max`, or one less when a surrogate pair straddles it.
 */
export function unitCut(text: string, max: number): number {
  return max < text.length && isPairAt(text, max - 1) ? max - 1 : max;
}

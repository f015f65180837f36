/**
 * The inline code spans and links of one line of Markdown, found as the expressions
 *   code: /^(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/
 *   link: /^\[([^\]\n]+)\]\(((?:https?:\/\/|tg:\/\/|mailto:)[^\s)]+)\)/
 * find them at each position, but with tables built once per line. Tried at every position,
 * the expressions read to the end of the line each time they fail: quadratic in runs of
 * backticks or of `[` (10-20 ms for a 4,000-character Telegram part, at every streaming edit;
 * 1.3-1.8 s for 40,000 characters). test/telegram/inline-spans.test.ts compares the two.
 */

export interface Span {
  /** The code, or the link's text. */
  text: string;
  /** The link's address; absent for code. */
  href?: string;
  /** Where the line goes on after the span. */
  end: number;
}

/**
 * The code span opening at each backtick. An opener is the rest of its run of backticks
 * (a shorter one would leave a backtick where the code must start), and it closes at the
 * nearest whole run of exactly as many backticks after it.
 */
export function codeSpans(line: string): (at: number) => Span | undefined {
  if (!line.includes('`')) return () => undefined;
  const closer = new Int32Array(line.length).fill(-1);
  // Seen from the right: run length → start of the nearest run of that length.
  const nearestRun = new Map<number, number>();
  let end = line.length;
  while (end > 0) {
    if (line[end - 1] !== '`') {
      end -= 1;
      continue;
    }
    let start = end - 1;
    while (start > 0 && line[start - 1] === '`') start -= 1;
    for (let at = start; at < end; at++) closer[at] = nearestRun.get(end - at) ?? -1;
    nearestRun.set(end - start, start);
    end = start;
  }
  return (at) => {
    const close = closer[at] ?? -1;
    if (close < 0) return undefined;
    let open = at;
    while (line[open] === '`') open += 1;
    return { text: line.slice(open, close), end: close + (open - at) };
  };
}

const SCHEMES = ['https://', 'http://', 'tg://', 'mailto:'];

/**
 * The link opening at each `[`: its text runs to the first `]` (not empty, no line break),
 * then `(`, a scheme, an address up to the first space or `)` (not empty), and `)`.
 */
export function links(line: string): (at: number) => Span | undefined {
  let textEnd: Int32Array | undefined;
  let hrefEnd: Int32Array | undefined;
  return (at) => {
    if (line[at] !== '[') return undefined;
    textEnd ??= nextWhere(line, (char) => char === ']' || char === '\n');
    const close = textEnd[at + 1] ?? line.length;
    if (close === at + 1 || line[close] !== ']' || line[close + 1] !== '(') return undefined;
    const scheme = SCHEMES.find((prefix) => line.startsWith(prefix, close + 2));
    if (!scheme) return undefined;
    const from = close + 2 + scheme.length;
    hrefEnd ??= nextWhere(line, (char) => char === ')' || /\s/.test(char));
    const stop = hrefEnd[from] ?? line.length;
    if (stop === from || line[stop] !== ')') return undefined;
    return { text: line.slice(at + 1, close), href: line.slice(close + 2, stop), end: stop + 1 };
  };
}

/** For each position, the first position at or after it whose character is one of these. */
function nextWhere(line: string, is: (char: string) => boolean): Int32Array {
  const next = new Int32Array(line.length + 1);
  next[line.length] = line.length;
  for (let at = line.length - 1; at >= 0; at--) {
    next[at] = is(line[at] as string) ? at : (next[at + 1] as number);
  }
  return next;
}

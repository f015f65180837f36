/** A Markdown ATX heading (`## Text ##`): its level and its text. */
export interface AtxHeading {
  level: number;
  text: string;
}

const isSpace = (char: string | undefined) => char !== undefined && /\s/.test(char);
const isLineBreak = (char: string) => /[\n\r\u2028\u2029]/.test(char);

/**
 * Reads a line as an ATX heading, exactly as `/^\s{0,indent}(#{1,6})\s+(.*?)\s*#*\s*$/` does
 * (`.+?` when `emptyText` is false), but in one pass: that expression tries every way of
 * sharing a run of spaces inside the text between its lazy text and the two `\s*` around the
 * closing hashes, which is cubic in the run (a 4,000-space heading line held the event loop
 * for 17 s). test/markdown-heading.test.ts compares the two on every short line.
 */
export function atxHeading(
  line: string,
  options: { indent: number; emptyText: boolean },
): AtxHeading | undefined {
  let at = 0;
  while (isSpace(line[at])) at += 1;
  if (at > options.indent) return undefined;
  let level = 0;
  while (line[at + level] === '#') level += 1;
  if (level < 1 || level > 6) return undefined;
  const rest = line.slice(at + level);
  let space = 0;
  while (isSpace(rest[space])) space += 1;
  if (space === 0) return undefined;
  // Where the closing part (spaces, hashes, spaces) starts at the earliest.
  let closing = rest.length;
  while (isSpace(rest[closing - 1])) closing -= 1;
  while (rest[closing - 1] === '#') closing -= 1;
  while (isSpace(rest[closing - 1])) closing -= 1;
  if (options.emptyText || space < rest.length) {
    // The spaces after the hashes are taken whole; the text is as short as the closing allows.
    const text = rest.slice(space, Math.max(closing, options.emptyText ? space : space + 1));
    return [...text].some(isLineBreak) ? undefined : { level, text };
  }
  // Nothing but spaces after the hashes, and the text needs a character: the last space that
  // `.` can match.
  for (let start = space - 1; start >= 1; start -= 1) {
    const text = rest[start] as string;
    if (!isLineBreak(text)) return { level, text };
  }
  return undefined;
}

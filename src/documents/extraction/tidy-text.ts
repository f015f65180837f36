/** Trailing spaces and tabs off every line, at most one blank line between paragraphs. */
export function tidyText(text: string): string {
  return text
    .split('\n')
    .map(withoutTrailingBlanks)
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/**
 * A line without the spaces and tabs at its end, in one pass: the regular expression
 * /[ \t]+\n/g tries every position of a long run of blanks that no newline ends, so a file
 * with a 600 KB run of spaces took minutes to read.
 */
function withoutTrailingBlanks(line: string): string {
  let end = line.length;
  while (end > 0 && (line[end - 1] === ' ' || line[end - 1] === '\t')) end--;
  return line.slice(0, end);
}

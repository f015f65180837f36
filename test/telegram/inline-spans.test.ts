import { describe, expect, it } from 'vitest';
import { codeSpans, links, type Span } from '../../src/telegram/inline-spans.ts';
import { seededRandom } from '../support/seeded-random.ts';

/** Lines of up to `length` pieces drawn from these, the same on every run. */
function lines(pieces: string[], count: number, length: number): string[] {
  const next = seededRandom(23);
  const made = ['', '`a`', '``a`b``', '```a``', '[a](http://b)', '[](tg://x)', '[a](mailto:)'];
  for (let i = 0; i < count; i++) {
    const size = Math.floor(next() * (length + 1));
    made.push(
      Array.from({ length: size }, () => pieces[Math.floor(next() * pieces.length)]).join(''),
    );
  }
  return made;
}

const CODE_PIECES = ['`', '`', '``', '[', ']', 'a', ' ', '\t', '\n', '\u00a0', '\\', '\r'];
// Links need their parts in order: the parts come often, whole and broken.
const LINK_PIECES = ['[a', '[a', '[a', '[', ']', '(', 'x', ' ', '\t', '\n', '\u00a0', '`', '\\'];
LINK_PIECES.push('](http://', '](https://', '](tg://', '](mailto:', '](http:/', 'x)', 'x)', ')');

const CODE = /^(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/;
const LINK = /^\[([^\]\n]+)\]\(((?:https?:\/\/|tg:\/\/|mailto:)[^\s)]+)\)/;

/** What the converter found at each position of the line: by the expression, or by the table. */
function found(line: string, at: (at: number) => Span | undefined): string {
  return JSON.stringify(Array.from({ length: line.length + 1 }, (_, i) => at(i) ?? null));
}

const byExpression = (line: string, expression: RegExp) => (at: number) => {
  const match = expression.exec(line.slice(at));
  if (!match) return undefined;
  const end = at + match[0].length;
  return expression === LINK
    ? { text: match[1] as string, href: match[2] as string, end }
    : { text: match[2] as string, end };
};

describe('code spans and links found with tables', () => {
  it('finds at every position of every short line what the code expression finds', () => {
    let spans = 0;
    for (const line of lines(CODE_PIECES, 40_000, 12)) {
      const expected = found(line, byExpression(line, CODE));
      expect(found(line, codeSpans(line)), JSON.stringify(line)).toBe(expected);
      spans += expected.split('"end"').length - 1;
    }
    expect(spans).toBeGreaterThan(5_000);
  });

  it('finds at every position of every short line what the link expression finds', () => {
    let links_ = 0;
    for (const line of lines(LINK_PIECES, 40_000, 8)) {
      const expected = found(line, byExpression(line, LINK));
      expect(found(line, links(line)), JSON.stringify(line)).toBe(expected);
      links_ += expected.split('"end"').length - 1;
    }
    expect(links_).toBeGreaterThan(500);
  });
});

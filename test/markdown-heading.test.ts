import { describe, expect, it } from 'vitest';
import { atxHeading } from '../src/markdown-heading.ts';
import { seededRandom } from './support/seeded-random.ts';

/** Every line of up to `length` characters drawn from these, in a fixed pseudo-random order. */
function lines(count: number, length: number): string[] {
  const chars = ['#', ' ', ' ', '\t', 'a', 'b', '\r', '\n', '\u00a0', '\u2028'];
  const next = seededRandom(11);
  const made = ['', '#', '# ', '#  ', '# a', '####### a', '   # a', '    # a', '# a #', '# #'];
  for (let i = 0; i < count; i++) {
    const size = Math.floor(next() * (length + 1));
    made.push(
      Array.from({ length: size }, () => chars[Math.floor(next() * chars.length)]).join(''),
    );
  }
  return made;
}

const byExpression = (expression: RegExp, line: string) => {
  const match = expression.exec(line);
  return match ? { level: (match[1] as string).length, text: match[2] as string } : undefined;
};

describe('ATX headings read in one pass', () => {
  it("reads every short line as the chunker's expression does", () => {
    for (const line of lines(40_000, 12)) {
      expect(atxHeading(line, { indent: 0, emptyText: false }), JSON.stringify(line)).toEqual(
        byExpression(/^(#{1,6})\s+(.+?)\s*#*\s*$/, line),
      );
    }
  });

  it("reads every short line as the Telegram converter's expression does", () => {
    for (const line of lines(40_000, 12)) {
      expect(atxHeading(line, { indent: 3, emptyText: true }), JSON.stringify(line)).toEqual(
        byExpression(/^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/, line),
      );
    }
  });
});

import type { Token } from 'marked';
import { describe, expect, it } from 'vitest';
import { marked } from '../../web/src/markdown.ts';
import { StreamingMarkdown } from '../../web/src/streaming-markdown.ts';
import { seededRandom } from '../support/seeded-random.ts';

/**
 * The web client draws a streaming answer block by block (web/src/streaming-markdown.ts).
 * Whatever the cut, every intermediate drawing must be what rendering the whole text so far
 * gives. (Rendering here is marked with the page's own settings; DOMPurify needs a browser and
 * runs after it in the page, per block: test/web/web-client.test.ts checks what it leaves.)
 */
const SAMPLES: Record<string, string> = {
  'paragraphs, list, code, table (the benchmark’s kind)': Array.from({ length: 400 }, (_, i) => {
    if (i % 200 === 199) return '\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n';
    if (i % 50 === 49) return '\n\n- item\n- item\n\n```js\nconst x = 1;\n```\n\n';
    return ['The **answer**', ' has', ' `code`', ',', ' lists', ' and', ' words', '.'][i % 8];
  }).join(''),
  'a plan': [
    'Here is a plan for **Saturday**:',
    '',
    '1. Pick up the dry cleaning',
    '2. Call 민수 about dinner',
    '3. Back up the photos:',
    '',
    '```sh',
    'rsync -a ~/Photos /mnt/backup/',
    '```',
    '',
    'Sources:',
    '- notes/weekend.md',
  ].join('\n'),
  'a code block with blank lines in it, then more':
    '```py\ndef f():\n\n    return 1\n\n\n```\n\nDone.',
  'a loose list whose items go on after a blank line':
    '- one\n\n  more about one\n\n- two\n\n      indented code in two\n\nAfter the list.\n',
  'setext headings, rules and quotes':
    'Title\n=====\n\nSub\n---\n\n> quoted\n> still\n\n> another\n\n***\n\nend',
  'model HTML and links':
    'Look: <img src=x onerror="1">\n\n<div>\nblock html\n</div>\n\n[x](javascript:1) [y](https://example.com) ![z](https://example.com/a.png)',
  'a table that grows row by row, then a paragraph':
    '| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n| 5 | 6 |\n\nparagraph\nwith a break',
  'a numbered list with blank lines between items (a new item continues it)':
    'Steps:\n\n1. First\n\n2. Second\n\n10. Tenth\n\n2) y\n  b\n\n2) z\n\nEnd.',
  'a quote taken over by a setext line': '> q\n--\n\nnext',
  'Windows line ends and tabs': 'one\r\n\r\n\ttabbed code\r\n\r\n- a\r\n- b\r\n\r\nend',
};

/** Feeds `text` in pieces of `size`, checking every drawing against a whole render. */
function feed(text: string, size: number) {
  const rendered: string[] = [];
  const stream = new StreamingMarkdown(
    (markdown) => marked.lexer(markdown),
    (tokens: Token[]) => {
      const html = marked.parser(tokens);
      rendered.push(html);
      return html;
    },
  );
  let drawn = stream.draw('');
  for (let end = size; end < text.length + size; end += size) {
    const prefix = text.slice(0, end);
    drawn = stream.draw(prefix);
    const whole = drawn.done.map((block) => block.html).join('') + drawn.tail;
    if (whole !== marked.parse(prefix, { async: false })) {
      throw new Error(`differs after ${end} characters:\n${JSON.stringify(prefix)}`);
    }
  }
  return { drawn, renderedChars: rendered.reduce((sum, html) => sum + html.length, 0) };
}

describe('drawing a streaming answer block by block', () => {
  for (const [name, text] of Object.entries(SAMPLES)) {
    it(`draws what a whole render draws, cut anywhere: ${name}`, () => {
      for (const size of [1, 2, 3, 7, 16]) feed(text, size);
    });
  }

  it('draws what a whole render draws for random documents, cut anywhere', () => {
    const lines = ['para', '- a', '  b', '', '', '    code', '```', '# h', '---', '===', '> q'];
    lines.push('| a | b |', '|---|---|', '1. x', '2) y', '<div>', '<span>x</span>', 'text');
    const random = seededRandom(22);
    for (let n = 0; n < 2_000; n++) {
      const count = 3 + Math.floor(random() * 6);
      const text = Array.from({ length: count }, () => lines[Math.floor(random() * 18)]).join('\n');
      feed(text, 1);
    }
  });

  it('draws a finished block once, so a long answer costs about its length, not its square', () => {
    const text = SAMPLES['paragraphs, list, code, table (the benchmark’s kind)'] as string;
    const { drawn, renderedChars } = feed(text, 4);
    const final = marked.parse(text, { async: false }).length;
    expect(drawn.done.length).toBeGreaterThan(20);
    // Redrawing everything each time would render ~ (length / 4) × (length / 2) characters.
    expect(renderedChars).toBeLessThan(final * 40);
    const keys = drawn.done.map((block) => block.key);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('starts over when the text is not a continuation (a retried answer)', () => {
    const stream = new StreamingMarkdown(
      (markdown) => marked.lexer(markdown),
      (tokens) => marked.parser(tokens),
    );
    stream.draw('First answer.\n\nSecond paragraph');
    const drawn = stream.draw('Something else.');
    expect(drawn.done).toEqual([]);
    expect(drawn.tail).toBe('<p>Something else.</p>\n');
  });
});

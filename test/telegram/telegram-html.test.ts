import { describe, expect, it } from 'vitest';
import { partMessage, shownText } from '../../src/telegram/part-message.ts';
import { PART_CHARS, splitMessage } from '../../src/telegram/split-message.ts';
import { toTelegramHtml } from '../../src/telegram/telegram-html.ts';
import { parseTelegramHtml } from '../support/fake-telegram/parse-html.ts';
import { seededRandom } from '../support/seeded-random.ts';

/** What Telegram would show, or its refusal. */
const shown = (markdown: string) => parseTelegramHtml(toTelegramHtml(markdown));

describe('Markdown to Telegram HTML', () => {
  it('converts the common Markdown and escapes everything else', () => {
    expect(toTelegramHtml('**bold**, *it*, _it_, ~~gone~~, `a<b`')).toBe(
      '<b>bold</b>, <i>it</i>, <i>it</i>, <s>gone</s>, <code>a&lt;b</code>',
    );
    expect(toTelegramHtml('# Title\n- one\n> quoted')).toBe(
      '<b>Title</b>\n• one\n<blockquote>quoted</blockquote>',
    );
    expect(toTelegramHtml('[site](https://example.org/?a=1&b="2")')).toBe(
      '<a href="https://example.org/?a=1&amp;b=&quot;2&quot;">site</a>',
    );
    expect(toTelegramHtml('```ts\nif (a < b && c) {}\n```')).toBe(
      '<pre><code class="language-ts">if (a &lt; b &amp;&amp; c) {}</code></pre>',
    );
    // A backslash makes a mark text, as in Markdown; before anything else it is a backslash.
    expect(toTelegramHtml('\\*not it\\*, C:\\dir, \\<b>')).toBe('*not it*, C:\\dir, &lt;b&gt;');
  });

  it('never produces HTML Telegram refuses, whatever the answer holds', () => {
    for (const text of [
      '<b>not a tag</b> & <script>alert(1)</script> &amp; &#x;',
      '**a *b** c*',
      '**unclosed bold',
      'snake_case_name and 2*3*4',
      '```\nunclosed fence <x>',
      '_*__**~~`',
      '[broken](javascript:alert(1))',
      'a > b, c < d, e & f',
    ]) {
      const result = shown(text);
      expect(result, text).not.toHaveProperty('error');
    }
    expect(shown('snake_case_name and 2*3*4')).toEqual({ text: 'snake_case_name and 2*3*4' });
    expect(shown('<b>x</b> & <script>')).toEqual({ text: '<b>x</b> & <script>' });
  });

  // A `---` became a line of 10: a part of 4,000 characters with `---` between its paragraphs
  // showed over 4,096, and Telegram refused it.
  it('never shows more characters than the Markdown has, whatever the answer holds', () => {
    expect(toTelegramHtml('a\n---\nb\n____________')).toBe('a\n───\nb\n──────────');
    const next = seededRandom(41);
    // Every construct the conversion knows, whole and broken, and what it escapes.
    const pieces = [
      '---',
      '***',
      '___',
      '- - -',
      '#',
      '# ',
      '###### ',
      '>',
      '> ',
      '- ',
      '* ',
      '+ ',
    ];
    pieces.push('```', '```ts', '`', '``', '**', '*', '_', '__', '~~', '[a](http://b)', '[', ']');
    pieces.push(
      '(',
      ')',
      '\\',
      '\\*',
      '&',
      '<',
      '>',
      '"',
      'a',
      'word',
      ' ',
      '   ',
      '\t',
      '😀',
      '한',
    );
    pieces.push('\n', '\n', '\n', '\n\n', '\n---\n', '\n```\n', '\n> ', '\n# ', '\n- ');
    for (let i = 0; i < 20_000; i++) {
      const size = 1 + Math.floor(next() * 24);
      const text = Array.from({ length: size }, () => pieces[Math.floor(next() * pieces.length)]);
      const markdown = text.join('');
      const html = toTelegramHtml(markdown);
      const shown = parseTelegramHtml(html);
      if (!('text' in shown)) throw new Error(`refused: ${JSON.stringify(markdown)}`);
      expect(shown.text.length, markdown).toBeLessThanOrEqual(markdown.length);
      // What Parley measures is what Telegram shows.
      expect(shownText(html), markdown).toBe(shown.text);
    }
  });

  // Code spans and links were found with expressions tried at every position of a line, each
  // reading to the line's end when it failed: quadratic in a run of backticks or of `[`
  // (1.2-2.2 s for 40,000 of them; a Telegram part is 4,000, converted at every update).
  it('converts long runs of backticks and brackets in time linear in their length', () => {
    const n = 40_000;
    for (const text of [
      '`'.repeat(n),
      '['.repeat(n),
      `${'`'.repeat(n / 2)}${'a'.repeat(n / 2)}`,
      `${'['.repeat(n / 2)}](http://${'x'.repeat(n / 2)}`,
      '[a](tg://'.repeat(n / 9),
    ]) {
      const started = performance.now();
      const html = toTelegramHtml(text);
      expect(performance.now() - started, text.slice(0, 12)).toBeLessThan(500);
      expect(parseTelegramHtml(html), text.slice(0, 12)).toEqual({ text });
    }
  });
});

describe('splitting long answers', () => {
  it('cuts at paragraphs, then sentences, within the limit', () => {
    const paragraph = 'A sentence here. '.repeat(100).trim();
    const parts = splitMessage(`${paragraph}\n\n${paragraph}\n\n${paragraph}`);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(PART_CHARS);
    expect(parts[0]?.endsWith('.')).toBe(true);
    const long = 'Word '.repeat(3_000);
    for (const part of splitMessage(long)) expect(part.length).toBeLessThanOrEqual(PART_CHARS);
  });

  it('keeps the parts of a growing text once it has grown past them', () => {
    let text = '';
    for (let i = 0; i < 400; i++)
      text += `Sentence number ${i} is here.${i % 7 === 6 ? '\n\n' : ' '}`;
    const final = splitMessage(text);
    for (let end = PART_CHARS + 1; end < text.length; end += 97) {
      const partial = splitMessage(text.slice(0, end));
      for (const [i, part] of partial.slice(0, -1).entries()) expect(part).toBe(final[i]);
    }
  });

  it('cuts an answer into parts each Telegram shows whole, as HTML', () => {
    // The audit's answer: items between thematic breaks.
    const items = Array.from({ length: 40 }, (_, i) => `Item ${i}: ${'x'.repeat(110)}.`);
    for (const part of splitMessage(items.join('\n\n---\n\n'))) {
      const message = partMessage(part);
      expect(message.html).toBe(true);
      expect(shownText(message.text).length).toBeLessThanOrEqual(4_096);
    }
    // HTML past the Bot API's 32 KiB (30 bytes for every 3 characters of Markdown) goes plain.
    const quoted = '>&\n'.repeat(1_300);
    expect(Buffer.byteLength(toTelegramHtml(quoted))).toBeGreaterThan(32_768);
    expect(partMessage(quoted)).toEqual({ text: quoted, html: false, blank: false });
    // HTML that shows nothing (Telegram refuses it) goes plain too, marked blank.
    for (const part of ['```', '>', '# ', '```ts\n```']) {
      expect(partMessage(part), part).toEqual({ text: part, html: false, blank: true });
    }
  });

  it('closes and reopens a code block cut in two', () => {
    const code = `\`\`\`\n${'x = 1\n'.repeat(1_000)}\`\`\``;
    const parts = splitMessage(code);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.trim().startsWith('```')).toBe(true);
      expect(part.trim().endsWith('```')).toBe(true);
      expect(parseTelegramHtml(toTelegramHtml(part))).not.toHaveProperty('error');
    }
  });

  it('finds a code block cut in two whatever ends its lines (\\r, U+2028) and however indented', () => {
    for (const end of ['\r', '\u2028', '\r\n']) {
      const code = `Intro${end}  \t${end}   \`\`\`js${end}${`x = 1;${end}`.repeat(1_000)}\`\`\``;
      const parts = splitMessage(code);
      expect(parts.length).toBeGreaterThan(1);
      // The first part closes the block it opened; each later one reopens it.
      expect(parts[0]?.endsWith('\n```')).toBe(true);
      for (const part of parts.slice(1)) expect(part.startsWith('```\n')).toBe(true);
    }
  });
});

import { atxHeading } from '../markdown-heading.ts';
import { codeSpans, links } from './inline-spans.ts';

/**
 * The answer's Markdown in Telegram's HTML subset (`parse_mode: HTML`): bold, italic,
 * strikethrough, inline code, fenced code blocks, links, headings (bold), list bullets and
 * quotes. Everything else is text: `<`, `>` and `&` are escaped, so an answer holding
 * `<script>` or a broken tag still arrives as written. Tags are only emitted in matched
 * pairs, innermost first, so the result always nests (Telegram refuses HTML that does not).
 * A part of a longer answer is converted on its own (an unclosed fence is closed).
 *
 * The text the user sees is never longer than the Markdown it came from (every rule drops or
 * keeps characters, none adds any): a part cut to fit Telegram's 4,096 characters as Markdown
 * (split-message.ts) still fits once converted.
 */
export function toTelegramHtml(markdown: string): string {
  const out: string[] = [];
  const lines = markdown.split('\n');
  let fence: { language: string; lines: string[] } | undefined;
  for (const line of lines) {
    const fenceMark = /^\s*```\s*([\w+#.-]*)\s*$/.exec(line);
    if (fence) {
      if (fenceMark && fenceMark[1] === '') {
        out.push(codeBlock(fence.language, fence.lines));
        fence = undefined;
      } else fence.lines.push(line);
      continue;
    }
    if (fenceMark) {
      fence = { language: fenceMark[1] ?? '', lines: [] };
      continue;
    }
    out.push(blockLine(line));
  }
  if (fence) out.push(codeBlock(fence.language, fence.lines));
  return out.join('\n');
}

/** Text as Telegram HTML: `&`, `<` and `>` as entities (the user sees them as written). */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function codeBlock(language: string, lines: string[]): string {
  const body = escapeHtml(lines.join('\n'));
  return language
    ? `<pre><code class="language-${escapeHtml(language)}">${body}</code></pre>`
    : `<pre>${body}</pre>`;
}

function blockLine(line: string): string {
  const heading = atxHeading(line, { indent: 3, emptyText: true });
  if (heading) return `<b>${inline(heading.text)}</b>`;
  const quote = /^\s{0,3}>\s?(.*)$/.exec(line);
  if (quote) return `<blockquote>${inline(quote[1] ?? '')}</blockquote>`;
  const bullet = /^(\s*)[-*+]\s+(.*)$/.exec(line);
  if (bullet) return `${bullet[1] ?? ''}• ${inline(bullet[2] ?? '')}`;
  if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) return thematicBreak(line);
  return inline(line);
}

/**
 * A line across, as long as the `---` written, up to 10. A fixed 10 made a part of `---`
 * between paragraphs show more characters than its Markdown, past the 4,096 Telegram takes.
 */
const thematicBreak = (line: string) => '─'.repeat(Math.min(line.trim().length, 10));

const TAGS: Record<string, string> = { '**': 'b', __: 'b', '*': 'i', _: 'i', '~~': 's' };

/**
 * Inline Markdown of one line, in one pass (it runs on every streaming edit of a Telegram
 * answer). Delimiters are matched with a stack: a closer that matches the innermost open
 * delimiter closes it; unmatched openers stay as the characters they were.
 */
function inline(text: string): string {
  const out: string[] = [];
  const open: { delimiter: string; at: number }[] = [];
  const codeAt = codeSpans(text);
  const linkAt = links(text);
  let i = 0;
  while (i < text.length) {
    // A backslash before ASCII punctuation makes it text, as in Markdown (`\*` is a `*`).
    const escaped = text[i] === '\\' ? text[i + 1] : undefined;
    if (escaped !== undefined && /[!-/:-@[-`{-~]/.test(escaped)) {
      out.push(escapeHtml(escaped));
      i += 2;
      continue;
    }
    const code = codeAt(i);
    if (code) {
      out.push(`<code>${escapeHtml(code.text)}</code>`);
      i = code.end;
      continue;
    }
    const link = linkAt(i);
    if (link) {
      const href = escapeHtml(link.href ?? '').replace(/"/g, '&quot;');
      out.push(`<a href="${href}">${escapeHtml(link.text)}</a>`);
      i = link.end;
      continue;
    }
    const delimiter = ['**', '__', '~~', '*', '_'].find((d) => text.startsWith(d, i));
    if (delimiter) {
      const before = text[i - 1] ?? ' ';
      const after = text[i + delimiter.length] ?? ' ';
      const top = open.at(-1);
      // `snake_case` and `2*3*4` are text: `_` and `*` need a non-word neighbour outside.
      const intraword = /\w/.test(before) && /\w/.test(after) && delimiter.length === 1;
      if (top?.delimiter === delimiter && !/\s/.test(before) && !intraword) {
        open.pop();
        out[top.at] = `<${TAGS[delimiter]}>`;
        out.push(`</${TAGS[delimiter]}>`);
        i += delimiter.length;
        continue;
      }
      if (!/\s/.test(after) && after !== ' ' && !intraword) {
        open.push({ delimiter, at: out.length });
        out.push(delimiter);
        i += delimiter.length;
        continue;
      }
      out.push(escapeHtml(delimiter));
      i += delimiter.length;
      continue;
    }
    out.push(escapeHtml(text[i] ?? ''));
    i++;
  }
  return out.join('');
}

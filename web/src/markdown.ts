import DOMPurify from 'dompurify';
import { Marked, type Token, type Tokens } from 'marked';
import { StreamingMarkdown } from './streaming-markdown.ts';

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const SAFE_URL = /^(https?:|mailto:)/i;

/**
 * A model's answer is untrusted text. Markdown becomes HTML, but HTML the model writes is shown
 * as text, a link goes only to http(s) or mailto (anything else is its words), and an image
 * becomes a link (nothing loads from elsewhere). DOMPurify then checks the result anyway.
 */
export const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag) {
      return escapeHtml(token.text);
    },
    link(token: Tokens.Link) {
      const text = this.parser.parseInline(token.tokens);
      if (!SAFE_URL.test(token.href.trim())) return text;
      return `<a href="${escapeHtml(token.href)}" target="_blank" rel="noopener noreferrer">${text}</a>`;
    },
    image(token: Tokens.Image) {
      if (!SAFE_URL.test(token.href.trim())) return escapeHtml(token.text);
      return `<a href="${escapeHtml(token.href)}" target="_blank" rel="noopener noreferrer">${escapeHtml(token.text || token.href)}</a>`;
    },
  },
});

const PURIFY = {
  FORBID_TAGS: [
    'style',
    'img',
    'form',
    'input',
    'button',
    'textarea',
    'select',
    'iframe',
    'svg',
    'math',
  ],
  FORBID_ATTR: ['style', 'class', 'id'],
  ADD_ATTR: ['target'],
};

/** Safe HTML for some of an answer's block tokens. */
function renderTokens(tokens: Token[]): string {
  return DOMPurify.sanitize(marked.parser(tokens), PURIFY);
}

/** Draws one answer block by block as it grows (see StreamingMarkdown); one per answer. */
export const answerRenderer = () =>
  new StreamingMarkdown((markdown) => marked.lexer(markdown), renderTokens);

/** Splits `<think>…</think>` (show_thinking) from the answer. */
export function splitThinking(text: string): { thinking: string | undefined; answer: string } {
  if (!text.startsWith('<think>')) return { thinking: undefined, answer: text };
  const end = text.indexOf('</think>');
  if (end < 0) return { thinking: text.slice(7), answer: '' };
  return { thinking: text.slice(7, end), answer: text.slice(end + 8).replace(/^\s+/, '') };
}

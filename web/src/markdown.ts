import DOMPurify from 'dompurify';
import { Marked, type Tokens } from 'marked';

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const SAFE_URL = /^(https?:|mailto:)/i;

/**
 * A model's answer is untrusted text. Markdown becomes HTML, but HTML the model writes is shown
 * as text, a link goes only to http(s) or mailto (anything else is its words), and an image
 * becomes a link (nothing loads from elsewhere). DOMPurify then checks the result anyway.
 */
const marked = new Marked({
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

export function renderMarkdown(text: string): string {
  const html = marked.parse(text, { async: false });
  return DOMPurify.sanitize(html, PURIFY);
}

/** Splits `<think>…</think>` (show_thinking) from the answer. */
export function splitThinking(text: string): { thinking: string | undefined; answer: string } {
  if (!text.startsWith('<think>')) return { thinking: undefined, answer: text };
  const end = text.indexOf('</think>');
  if (end < 0) return { thinking: text.slice(7), answer: '' };
  return { thinking: text.slice(7, end), answer: text.slice(end + 8).replace(/^\s+/, '') };
}

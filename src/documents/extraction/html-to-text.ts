import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';

/**
 * HTML → the plain text the chunker wants: headings as Markdown ATX lines, one block per
 * paragraph, list items as `- item`, table rows as cells joined by ` | `.
 *
 * `mainContent` first asks Mozilla's Readability (the algorithm of Firefox's reader view) for
 * the article, so menus, headers, footers and sidebars stay out of the index; linkedom gives
 * it a DOM without a browser (jsdom would be ~10× the install and start-up for no gain here).
 * Elements that are navigation by definition (`nav`, `aside`, `footer`, ARIA navigation) are
 * removed first; when Readability then finds no article, the rest of the body is used.
 */
export function htmlToText(html: string, options: { mainContent: boolean }): string {
  // linkedom needs a whole document: a fragment (mammoth's output, a saved snippet) gets one.
  const { document } = parseHTML(
    /<html[\s>]/i.test(html)
      ? html
      : `<!doctype html><html><head></head><body>${html}</body></html>`,
  );
  for (const element of document.querySelectorAll('script, style, noscript, template, svg')) {
    element.remove();
  }
  const title = document.querySelector('title')?.textContent?.trim() ?? '';
  if (options.mainContent) {
    // Navigation by definition, removed even when Readability would keep it on a short page.
    for (const element of document.querySelectorAll(NAVIGATION)) element.remove();
    const article = new Readability(document.cloneNode(true) as never).parse();
    if (article?.content) {
      const body = blocksToText(
        parseHTML(`<html><body>${article.content}</body></html>`).document.body,
      );
      const heading = article.title?.trim() || title;
      return heading && !body.startsWith(`# ${heading}`) ? `# ${heading}\n\n${body}` : body;
    }
  }
  const root: DomNode = document.body ?? document.documentElement;
  return blocksToText(root);
}

/** The little of the DOM this file reads (linkedom implements it; no DOM lib is loaded). */
interface DomNode {
  nodeType: number;
  textContent: string | null;
  childNodes: Iterable<DomNode>;
}

const NAVIGATION =
  'nav, aside, menu, footer, [role=navigation], [role=banner], [role=contentinfo], [aria-hidden=true]';

const BLOCKS = new Set([
  'address',
  'article',
  'blockquote',
  'dd',
  'div',
  'dl',
  'dt',
  'figcaption',
  'figure',
  'li',
  'main',
  'ol',
  'p',
  'pre',
  'section',
  'table',
  'tbody',
  'thead',
  'tfoot',
  'tr',
  'ul',
  'body',
  'header',
  'footer',
  'nav',
  'aside',
  'details',
  'summary',
  'caption',
]);

function blocksToText(root: DomNode): string {
  const blocks: string[] = [];
  let line = '';
  const flush = () => {
    const text = line.replace(/[ \t\u00a0]+/g, ' ').trim();
    if (text) blocks.push(text);
    line = '';
  };
  const walk = (node: DomNode) => {
    if (node.nodeType === 3) {
      line += node.textContent ?? '';
      return;
    }
    if (node.nodeType !== 1) return;
    const element = node as DomNode & { tagName: string };
    const tag = element.tagName.toLowerCase();
    const heading = /^h([1-6])$/.exec(tag);
    if (heading) {
      flush();
      line = `${'#'.repeat(Number(heading[1]))} ${element.textContent ?? ''}`;
      flush();
      return;
    }
    if (tag === 'br') {
      line += '\n';
      return;
    }
    if (tag === 'pre') {
      flush();
      const code = (element.textContent ?? '').trimEnd();
      if (code.trim()) blocks.push(code);
      return;
    }
    if (tag === 'td' || tag === 'th') {
      if (line.trim()) line += ' | ';
      for (const child of element.childNodes) walk(child);
      return;
    }
    if (!BLOCKS.has(tag)) {
      for (const child of element.childNodes) walk(child);
      return;
    }
    flush();
    if (tag === 'li') line = '- ';
    for (const child of element.childNodes) walk(child);
    flush();
  };
  walk(root);
  flush();
  return blocks
    .map((block) =>
      block
        .split('\n')
        .map((part) => part.trim())
        .join('\n'),
    )
    .filter((block) => block.replace(/^- $/, '') !== '')
    .join('\n\n');
}

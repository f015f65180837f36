/**
 * Telegram's HTML parse mode, as its servers check it: only the supported tags, properly
 * nested; `<`, `>` and `&` only as tags or the named entities `&lt; &gt; &amp; &quot;` (or
 * numeric ones). Returns the visible text, or the error Telegram answers with.
 */
const TAGS = new Set([
  'b',
  'strong',
  'i',
  'em',
  'u',
  'ins',
  's',
  'strike',
  'del',
  'span',
  'tg-spoiler',
  'a',
  'code',
  'pre',
  'blockquote',
  'tg-emoji',
]);

export function parseTelegramHtml(html: string): { text: string } | { error: string } {
  const open: string[] = [];
  let text = '';
  let i = 0;
  while (i < html.length) {
    const c = html[i] as string;
    if (c === '<') {
      const tag = /^<(\/?)([a-z-]+)((?:\s+[a-z-]+(?:="[^"<>]*")?)*)\s*>/.exec(html.slice(i));
      if (!tag) return { error: `Can't find end of the entity starting at byte offset ${i}` };
      const [whole, closing, name] = tag as unknown as [string, string, string];
      if (!TAGS.has(name)) return { error: `Unsupported start tag "${name}" at byte offset ${i}` };
      if (closing) {
        if (open.pop() !== name) {
          return { error: `Can't find end tag corresponding to start tag "${name}"` };
        }
      } else open.push(name);
      i += whole.length;
      continue;
    }
    if (c === '&') {
      const entity = /^&(lt|gt|amp|quot|#\d{1,7}|#x[0-9a-fA-F]{1,6});/.exec(html.slice(i));
      if (!entity) {
        return { error: `Character entity expected at byte offset ${i}` };
      }
      const name = entity[1] as string;
      text +=
        name === 'lt'
          ? '<'
          : name === 'gt'
            ? '>'
            : name === 'amp'
              ? '&'
              : name === 'quot'
                ? '"'
                : String.fromCodePoint(
                    name.startsWith('#x')
                      ? Number.parseInt(name.slice(2), 16)
                      : Number(name.slice(1)),
                  );
      i += entity[0].length;
      continue;
    }
    if (c === '>') return { error: `Unexpected end tag at byte offset ${i}` };
    text += c;
    i++;
  }
  if (open.length > 0) {
    return { error: `Can't find end tag corresponding to start tag "${open.at(-1)}"` };
  }
  return { text };
}

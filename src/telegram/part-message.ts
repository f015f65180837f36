import { toTelegramHtml } from './telegram-html.ts';

/**
 * The most characters Telegram shows in one message (or draft): 4,096 of its text once the HTML
 * is parsed. Counted here in UTF-16 units, never fewer than the code points Telegram counts.
 */
export const MESSAGE_MAX_CHARS = 4_096;
/** The most the Bot API takes as a message's `text`, tags and entities included (32 KiB). */
const SOURCE_MAX_BYTES = 32_768;

/** A message's text as sent, and whether it is HTML (`parse_mode: HTML`) or plain. */
export interface PartMessage {
  text: string;
  html: boolean;
  /**
   * The HTML shows nothing (a fence just opened: `<pre></pre>`; a bare `>` or `# `), which
   * Telegram refuses: sent plain, the part shows its marks.
   */
  blank: boolean;
}

/**
 * A part of an answer (split-message.ts) as Telegram takes it: its HTML when that shows
 * something within Telegram's limits, else its Markdown as plain text, which always fits (a
 * part is at most PART_CHARS, and holds more than whitespace). The HTML never shows more than
 * the Markdown, but its tags and entities can pass the 32 KiB the Bot API reads (`>&` on every
 * line is 3 characters for 30 bytes).
 */
export function partMessage(part: string): PartMessage {
  const html = toTelegramHtml(part);
  const shown = shownText(html);
  const blank = shown.trim() === '';
  const fits =
    !blank && shown.length <= MESSAGE_MAX_CHARS && Buffer.byteLength(html) <= SOURCE_MAX_BYTES;
  return fits ? { text: html, html: true, blank } : { text: part, html: false, blank };
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"' };

/**
 * What the user sees of HTML as toTelegramHtml writes it: its text, tags left out (a tag has no
 * `<` inside, which keeps this linear whatever the text: see web-search.ts).
 */
export function shownText(html: string): string {
  return html.replace(/<[^<>]*>/g, '').replace(/&(?:amp|lt|gt|quot);/g, (e) => ENTITIES[e] ?? e);
}

import { unitCut } from '../first-characters.ts';

/**
 * Telegram takes at most 4,096 characters per message, counted in the text it shows (after its
 * HTML is parsed). Parts are cut from the Markdown at most PART_CHARS UTF-16 units long; the
 * HTML conversion never shows more characters than its Markdown has (telegram-html.ts), and a
 * part sent as plain text shows its Markdown, so either way a part fits (part-message.ts). A
 * fence cut in two is closed and reopened.
 */
export const PART_CHARS = 4_000;

/**
 * Splits at the last paragraph break within the limit, else a line break, else a sentence's
 * end, else a space, else hard. A part depends only on the text up to the limit after its
 * start, so the parts of a growing answer never change once the answer has grown past them:
 * a streaming answer can send its earlier parts for good.
 */
export function splitMessage(text: string, limit = PART_CHARS): string[] {
  const parts: string[] = [];
  const blankLines = new LeadingBlankLines();
  let rest = text;
  while (rest.length > limit) {
    const window = rest.slice(0, limit);
    const cut = cutPoint(window);
    let part = rest.slice(0, cut).trimEnd();
    let next = blankLines.drop(rest.slice(cut));
    if (isInsideFence(part)) {
      part = `${part}\n\`\`\``;
      next = `\`\`\`\n${next}`;
      blankLines.forget();
    }
    if (part.trim()) parts.push(part);
    rest = next;
  }
  if (rest.trim() || parts.length === 0) parts.push(rest);
  return parts;
}

function cutPoint(window: string): number {
  // Room for a closing fence when the cut falls inside a code block.
  const room = window.length - 4;
  const min = Math.floor(room / 2);
  // Each finds the end of its boundary's last match in window[0, room), looking back from the
  // end no further than `min`: collecting every match instead (a run of thousands of spaces
  // is thousands of /\s/ matches, for every part of a 4 MB answer at every streaming update)
  // held the event loop for seconds.
  for (const lastEnd of [lastBlankLineEnd, lastLineBreakEnd, lastSentenceEnd, lastSpaceEnd]) {
    const best = lastEnd(window, room, min);
    if (best >= min) return best;
  }
  // A hard cut counts UTF-16 units, as Telegram's limit does; it must not leave half an emoji
  // at the end of one message and the other half at the start of the next.
  return unitCut(window, room);
}

const SPACE = /\s/;
const SENTENCE_END = /[.!?。！？]/;

/** Where the last /\n\s*\n/ ends: just after a line break with only whitespace back to another. */
function lastBlankLineEnd(window: string, room: number, min: number): number {
  for (let j = window.lastIndexOf('\n', room - 1); j >= min - 1; ) {
    let k = j - 1;
    while (k >= 0 && window[k] !== '\n' && SPACE.test(window[k] ?? '')) k--;
    if (k >= 0 && window[k] === '\n') return j + 1;
    j = k < 0 ? -1 : window.lastIndexOf('\n', k);
  }
  return -1;
}

function lastLineBreakEnd(window: string, room: number): number {
  const at = window.lastIndexOf('\n', room - 1);
  return at < 0 ? -1 : at + 1;
}

/** Where the last sentence end followed by whitespace (within the room) ends. */
function lastSentenceEnd(window: string, room: number, min: number): number {
  for (let i = room - 2; i >= min - 1 && i >= 0; i--) {
    if (SENTENCE_END.test(window[i] ?? '') && SPACE.test(window[i + 1] ?? '')) return i + 1;
  }
  return -1;
}

function lastSpaceEnd(window: string, room: number, min: number): number {
  for (let i = room - 1; i >= min - 1 && i >= 0; i--) {
    if (SPACE.test(window[i] ?? '')) return i + 1;
  }
  return -1;
}

/**
 * Whether an odd number of lines start, after whitespace, with ``` (what `/^\s*```/gm` counts).
 * Each line's leading whitespace is read once: the pattern read it again from every line start
 * inside it, and a part of 4,000 U+2028 (each a line break to `^`, and whitespace) took 16 ms,
 * for every part of an answer at every streaming update.
 */
function isInsideFence(text: string): boolean {
  let fences = 0;
  for (let start = 0; start < text.length; ) {
    let at = start;
    while (at < text.length && SPACE.test(text[at] as string)) at++;
    if (text.startsWith('```', at)) {
      fences++;
      at += 3;
    }
    start = nextLineStart(text, at);
  }
  return fences % 2 === 1;
}

/** Where the first line after `from` starts (where `^` matches with the m flag), or the end. */
function nextLineStart(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x0a || code === 0x0d || code === 0x2028 || code === 0x2029) return i + 1;
  }
  return text.length;
}

/**
 * Drops a part's leading whitespace through its last line break (what `/^\s*\n/` removes).
 * Each part is a suffix of the one before, so a whitespace run spanning many parts is measured
 * once and remembered by its distance from the end: rescanning it for every part made a long
 * run of spaces in an answer quadratic (4 MB held the event loop for 6 s).
 */
class LeadingBlankLines {
  /** The last run measured: the text's length after its end and after its last line break. */
  #run: { after: number; afterBreak: number; within: number } | undefined;

  drop(text: string): string {
    if (!/^\s/.test(text)) return text;
    let run = this.#run;
    if (!run || text.length > run.within || text.length <= run.after) {
      // Found natively: a test per character of a 4 MB run was most of a split's time.
      const nonSpace = text.search(/\S/);
      const end = nonSpace < 0 ? text.length : nonSpace;
      const lastBreak = text.lastIndexOf('\n', end - 1);
      run = {
        after: text.length - end,
        afterBreak: text.length - lastBreak - 1,
        within: text.length,
      };
      if (lastBreak < 0) run.afterBreak = -1;
      this.#run = run;
    }
    // A line break still ahead of this suffix's start is dropped with what precedes it.
    return run.afterBreak >= 0 && text.length > run.afterBreak
      ? text.slice(text.length - run.afterBreak)
      : text;
  }

  /** The next text is not a suffix of the last one (a fence was reopened before it). */
  forget(): void {
    this.#run = undefined;
  }
}

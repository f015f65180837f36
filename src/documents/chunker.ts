import { atxHeading } from '../markdown-heading.ts';
import type { ExtractedPage } from './extracted-document.ts';

export interface ChunkingOptions {
  /** Largest chunk, in estimated tokens (Hangul counted by `hangulPerToken`). */
  maxTokens: number;
  /** Tokens of the previous chunk repeated at the start of the next one. */
  overlapTokens: number;
  /** Hangul syllables counted as one token when sizing chunks (default HANGUL_PER_TOKEN). */
  hangulPerToken?: number;
}

/** A piece of a document, with where it came from (for citations). */
export interface TextChunk {
  index: number;
  text: string;
  /** Page where the chunk starts (paged formats), else null. */
  page: number | null;
  /** Page where it ends. */
  pageEnd: number | null;
  /** Character offsets in the page text of its start and end. */
  start: number;
  end: number;
  /** The headings above it ("Guide > Install"), or "" outside any section. */
  heading: string;
  /** Its size as chunking counts it (chunkTokens). */
  tokens: number;
}

/** One sentence (or, for an overlong one, a run of words) with its place in the text. */
interface Unit {
  text: string;
  tokens: number;
  page: number | null;
  start: number;
  end: number;
  heading: string;
  /** First unit of a paragraph: joined to the previous one by a blank line. */
  paragraphStart: boolean;
  /** First unit under a heading: a good place to start a new chunk. */
  sectionStart: boolean;
}

/**
 * Structure-aware splitting: a document is cut at headings and paragraphs first, a paragraph
 * that does not fit into sentences, a sentence that does not fit into words (or characters,
 * for CJK text without spaces). Units are packed into chunks of at most `maxTokens`; a new
 * section starts a new chunk once the current one is a quarter full; the next chunk repeats
 * the last sentences of the previous one, up to `overlapTokens`. Each chunk starts with its
 * heading path when it does not already, so a chunk found alone still says what it is about.
 */
export function chunkDocument(
  pages: readonly ExtractedPage[],
  options: ChunkingOptions,
): TextChunk[] {
  const headings: string[] = []; // a section may span pages
  const hangulPerToken = options.hangulPerToken ?? HANGUL_PER_TOKEN;
  const size: Size = Object.assign((text: string) => chunkTokens(text, hangulPerToken), {
    fit: (text: string, maxTokens: number) => longestFit(text, maxTokens, hangulPerToken),
  });
  const units = pages.flatMap((page) => pageUnits(page, headings, options.maxTokens, size));
  const chunks: TextChunk[] = [];
  let current: Unit[] = [];
  let fresh = 0; // units of `current` not carried over from the previous chunk

  for (const unit of units) {
    const tokens = sumTokens(current);
    const full = tokens + unit.tokens > options.maxTokens;
    if (fresh > 0 && (full || (unit.sectionStart && tokens >= options.maxTokens / 4))) {
      chunks.push(toChunk(chunks.length, current));
      // Overlap: the trailing sentences that fit, unless a new section starts here.
      current = unit.sectionStart ? [] : tail(current, options.overlapTokens);
      while (current.length > 0 && sumTokens(current) + unit.tokens > options.maxTokens) {
        current.shift();
      }
      fresh = 0;
    }
    current.push(unit);
    fresh++;
  }
  if (fresh > 0) chunks.push(toChunk(chunks.length, current));
  return chunks;
}

const sumTokens = (units: readonly Unit[]) => units.reduce((sum, unit) => sum + unit.tokens, 0);

/** The last units of a chunk whose tokens fit `budget`; never the whole chunk. */
function tail(units: readonly Unit[], budget: number): Unit[] {
  const carried: Unit[] = [];
  let tokens = 0;
  for (let i = units.length - 1; i > 0; i--) {
    const unit = units[i] as Unit;
    if (tokens + unit.tokens > budget) break;
    carried.unshift(unit);
    tokens += unit.tokens;
  }
  return carried;
}

function toChunk(index: number, units: Unit[]): TextChunk {
  const first = units[0] as Unit;
  const last = units.at(-1) as Unit;
  let body = '';
  for (const unit of units) {
    if (body) body += unit.paragraphStart ? '\n\n' : ' ';
    // A short section merged into the next keeps the next one's heading in the text.
    if (body && unit.sectionStart && unit.heading) body += `${unit.heading}\n\n`;
    body += unit.text;
  }
  const headingLine = first.heading ? `${first.heading}\n\n` : '';
  const text = body.startsWith(first.heading.split(' > ').at(-1) ?? '\0')
    ? body
    : headingLine + body;
  return {
    index,
    text,
    page: first.page,
    pageEnd: last.page,
    start: first.start,
    end: last.end,
    heading: first.heading,
    tokens: units.reduce((sum, unit) => sum + unit.tokens, 0),
  };
}

/** A Markdown heading line (trimmed): `# Title`, its text at least a character. */
const heading = (line: string) => atxHeading(line, { indent: 0, emptyText: false });

function pageUnits(page: ExtractedPage, headings: string[], maxTokens: number, size: Size): Unit[] {
  const units: Unit[] = [];
  let sectionStart = false;
  for (const block of blocks(page.text)) {
    const title = heading(block.text);
    if (title) {
      headings.splice(title.level - 1, headings.length, title.text.trim());
      sectionStart = true;
      continue;
    }
    const path = headings.filter(Boolean).join(' > ');
    let paragraphStart = true;
    for (const piece of splitToFit(block.text, block.start, maxTokens, size)) {
      units.push({ ...piece, page: page.page, heading: path, paragraphStart, sectionStart });
      paragraphStart = false;
      sectionStart = false;
    }
  }
  return units;
}

interface Piece {
  text: string;
  tokens: number;
  start: number;
  end: number;
}

/**
 * Paragraphs (lines up to a blank line) and heading lines, with the offset where each starts.
 * Whitespace inside a paragraph is folded to single spaces (PDF line breaks are not meaning).
 */
function blocks(text: string): { text: string; start: number }[] {
  const found: { text: string; start: number }[] = [];
  let lines: string[] = [];
  let start = 0;
  const end = () => {
    const joined = lines.join(' ').replace(/\s+/g, ' ').trim();
    if (joined) found.push({ text: joined, start });
    lines = [];
  };
  let offset = 0;
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    const isHeading = heading(trimmed) !== undefined;
    if (!trimmed || isHeading) end();
    if (isHeading) found.push({ text: trimmed, start: offset + line.indexOf(trimmed) });
    else if (trimmed) {
      if (lines.length === 0) start = offset + line.indexOf(trimmed);
      lines.push(trimmed);
    }
    offset += line.length + 1;
  }
  end();
  return found;
}

/** Sentences, then words, then characters, until every piece fits. */
function splitToFit(text: string, start: number, maxTokens: number, size: Size): Piece[] {
  const whole = { text, tokens: size(text), start, end: start + text.length };
  if (whole.tokens <= maxTokens) return [whole];
  const pieces: Piece[] = [];
  for (const match of text.matchAll(SENTENCE)) {
    const sentence = match[0].trim();
    if (!sentence) continue;
    const at = start + match.index + match[0].indexOf(sentence);
    const tokens = size(sentence);
    if (tokens <= maxTokens)
      pieces.push({ text: sentence, tokens, start: at, end: at + sentence.length });
    else pieces.push(...splitWords(sentence, at, maxTokens, size));
  }
  return pieces;
}

/** Greedy runs of words (or of characters in a long word, e.g. CJK without spaces). */
function splitWords(text: string, start: number, maxTokens: number, size: Size): Piece[] {
  const pieces: Piece[] = [];
  let from = 0;
  let tokens = 0;
  for (const match of text.matchAll(/\S+\s*|\s+/g)) {
    let word = match[0];
    let at = match.index;
    let cost = boundedSize(word, maxTokens, size);
    while (cost > maxTokens) {
      // A single "word" longer than a chunk: cut it by characters.
      if (at > from) pieces.push(piece(text, start, from, at, size));
      const cut = cutAt(word, maxTokens, size);
      pieces.push(piece(text, start, at, at + cut, size));
      at += cut;
      word = word.slice(cut);
      cost = boundedSize(word, maxTokens, size);
      from = at;
      tokens = 0;
    }
    if (tokens + cost > maxTokens && at > from) {
      pieces.push(piece(text, start, from, at, size));
      from = at;
      tokens = 0;
    }
    tokens += cost;
  }
  if (from < text.length && text.slice(from).trim())
    pieces.push(piece(text, start, from, text.length, size));
  return pieces;
}

/**
 * The size of a word, or of enough of it to know that it does not fit: a long word (CJK text
 * without spaces runs to a whole paragraph) is measured once per chunk cut from it, so
 * measuring all of it each time made its chunking quadratic (200,000 characters: 2.8 s on
 * the event loop).
 */
function boundedSize(word: string, maxTokens: number, size: Size): number {
  return size.fit(word, maxTokens) === word.length ? size(word) : Number.POSITIVE_INFINITY;
}

/** The longest start of the word that fits, in whole characters (at least one). */
function cutAt(word: string, maxTokens: number, size: Size): number {
  return Math.max(size.fit(word, maxTokens), 1);
}

function piece(text: string, start: number, from: number, to: number, size: Size): Piece {
  const raw = text.slice(from, to);
  const trimmed = raw.trim();
  const lead = raw.indexOf(trimmed.charAt(0));
  return {
    text: trimmed,
    tokens: size(trimmed),
    start: start + from + Math.max(lead, 0),
    end: start + from + Math.max(lead, 0) + trimmed.length,
  };
}

/**
 * Ends at ., !, ? (and their full-width forms) followed by space, or at the text's end; a mark
 * followed by more of the word ("3.5", "example.com") is part of the sentence. Read once: the
 * earlier pattern read ahead to the next mark from every word, and when that mark was followed
 * by a letter, took one word and read again (a 200 KB paragraph ending in "3.5": 15 s of the
 * event loop while a document was ingested).
 */
const SENTENCE = /(?:[^.!?。！？]|[.!?。！？]+(?=\S))*(?:[.!?。！？]+(?=\s|$))?\s*/gu;

const WIDE = /[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]/gu;

/** The size of a text for chunking (see chunkTokens). */
interface Size {
  (text: string): number;
  /** UTF-16 units of the longest start of the text, in whole characters, that fits. */
  fit: (text: string, maxTokens: number) => number;
}

/**
 * Hangul syllables per token of chunk size. Tokenizers count about one token a syllable
 * (Qwen3's: 1.15 on the Korean benchmark set, 1.02 times `estimateTokens`; Gemma 3's
 * SentencePiece: 0.96), so the estimate is right about a Korean chunk's cost in context;
 * but a syllable carries less than four Latin letters, and at one a syllable 256 tokens cut
 * Korean encyclopedia paragraphs (220-580 characters) into 1.5 chunks on average, a question's
 * words landing in different chunks: Recall@1 0.887 against 0.907 for BM25 over whole
 * paragraphs. Quality stops rising at 1.75-2 syllables a token (0.902, 0.907;
 * bench/RESULTS.md, benchmark 2), as it did for English from 256 tokens up.
 */
export const HANGUL_PER_TOKEN = 2;

/**
 * A text's size for chunking: `estimateTokens`, except that Hangul syllables count
 * 1/`hangulPerToken` each. Other CJK scripts keep one a character (not measured).
 */
export function chunkTokens(text: string, hangulPerToken: number): number {
  // Counted a unit at a time: every code point WIDE matches is one UTF-16 unit (no
  // surrogates), and a megabyte of CJK text is then no array of a million matches.
  let wide = 0;
  let hangul = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (isHangul(code)) hangul++;
    if (isWide(code)) wide++;
  }
  return Math.ceil(hangul / hangulPerToken + (wide - hangul) + (text.length - wide) / 4);
}

/**
 * `chunkTokens` of each start of the text in turn, counted as it goes (one pass, where
 * measuring every start from the beginning made cutting a long CJK word quadratic): the UTF-16
 * units of the longest start, in whole characters, within `maxTokens`.
 */
export function longestFit(text: string, maxTokens: number, hangulPerToken: number): number {
  let hangul = 0;
  let wide = 0;
  let units = 0;
  let fit = 0;
  for (const char of text) {
    units += char.length;
    const code = char.codePointAt(0) ?? 0;
    if (isHangul(code)) hangul++;
    if (isWide(code)) wide++;
    if (Math.ceil(hangul / hangulPerToken + (wide - hangul) + (units - wide) / 4) > maxTokens) {
      break;
    }
    fit = units;
  }
  return fit;
}

/** Hangul (jamo and syllables), and the code points WIDE matches, one at a time. */
const isHangul = (code: number) =>
  (code >= 0x1100 && code <= 0x11ff) || (code >= 0xac00 && code <= 0xd7af);
const isWide = (code: number) =>
  isHangul(code) ||
  (code >= 0x2e80 && code <= 0x9fff) ||
  (code >= 0xf900 && code <= 0xfaff) ||
  (code >= 0xff00 && code <= 0xffef);

/**
 * Estimated tokens: one per CJK/Hangul character, one per four other characters (as the
 * chat history budget counts them), so a chunk of Korean and one of English hold about the
 * same share of a model's context.
 */
export function estimateTokens(text: string): number {
  const wide = text.match(WIDE)?.length ?? 0;
  return wide + Math.ceil((text.length - wide) / 4);
}

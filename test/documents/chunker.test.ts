import { describe, expect, it } from 'vitest';
import {
  chunkDocument,
  chunkTokens,
  estimateTokens,
  HANGUL_PER_TOKEN,
} from '../../src/documents/chunker.ts';
import { lexicalTerms } from '../../src/documents/lexical-terms.ts';

const sentences = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${prefix} sentence number ${i} says something.`).join(' ');

describe('chunkDocument', () => {
  it('keeps every chunk within the token limit, in order, with its page', () => {
    const pages = [
      { page: 1, text: `# Manual\n\n${sentences('First', 40)}` },
      { page: 2, text: sentences('Second', 40) },
    ];
    const chunks = chunkDocument(pages, { maxTokens: 64, overlapTokens: 12 });
    expect(chunks.length).toBeGreaterThan(4);
    expect(chunks.map((chunk) => chunk.index)).toEqual(chunks.map((_, i) => i));
    for (const chunk of chunks) expect(chunk.tokens).toBeLessThanOrEqual(64);
    expect(chunks[0]?.page).toBe(1);
    expect(chunks.at(-1)?.page).toBe(2);
    expect(chunks.find((chunk) => chunk.text.includes('Second sentence number 39'))?.page).toBe(2);
    // The heading carries over to page 2, so a chunk found alone still says what it is about.
    expect(chunks.at(-1)?.text.startsWith('Manual\n\n')).toBe(true);
  });

  it('repeats the last sentences of a chunk at the start of the next (overlap)', () => {
    const chunks = chunkDocument([{ page: null, text: sentences('Plain', 30) }], {
      maxTokens: 60,
      overlapTokens: 15,
    });
    const [first, second] = chunks;
    const lastSentence = first?.text.split(/(?<=\.) /).at(-1) as string;
    expect(second?.text.startsWith(lastSentence)).toBe(true);
    const none = chunkDocument([{ page: null, text: sentences('Plain', 30) }], {
      maxTokens: 60,
      overlapTokens: 0,
    });
    expect(none[1]?.text.startsWith(lastSentence)).toBe(false);
  });

  it('starts a new chunk at a section heading and records the heading path', () => {
    const text = `# Guide\n\n${sentences('Intro', 6)}\n\n## Install\n\nRun the installer.\n\n## Use\n\n${sentences('Use', 6)}`;
    const chunks = chunkDocument([{ page: null, text }], { maxTokens: 80, overlapTokens: 10 });
    // "Install" is too short for a chunk of its own: it shares one with "Use", whose heading
    // stays in the text; the long "Intro" section is never mixed with either.
    const use = chunks.find((chunk) => chunk.text.includes('Use sentence number 0'));
    expect(use?.heading).toBe('Guide > Install');
    expect(use?.text).toContain('Run the installer.\n\nGuide > Use\n\nUse sentence number 0');
    expect(chunks.filter((chunk) => chunk.text.includes('Intro')).length).toBeGreaterThan(0);
    for (const chunk of chunks) {
      expect(chunk.text.includes('Intro') && chunk.text.includes('Run the installer')).toBe(false);
    }
  });

  it('cuts Korean text without spaces by characters, and records offsets in the page', () => {
    const korean = '가'.repeat(500);
    const chunks = chunkDocument([{ page: 3, text: `앞 문단.\n\n${korean}` }], {
      maxTokens: 100,
      overlapTokens: 0,
    });
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    for (const chunk of chunks) {
      expect(chunkTokens(chunk.text, HANGUL_PER_TOKEN)).toBeLessThanOrEqual(100);
    }
    expect(
      chunks
        .map((chunk) => chunk.text)
        .join('')
        .replaceAll(/[^가]/g, ''),
    ).toBe(korean);
    expect(chunks[0]?.start).toBe(0);
    expect(chunks.every((chunk) => chunk.page === 3)).toBe(true);
  });

  it('counts two Hangul syllables a token, so a Korean paragraph of 380 stays whole', () => {
    const sentence = '경복궁은 조선 왕조의 법궁으로 1395년에 지어졌다. '; // 19 syllables
    const paragraph = sentence.repeat(20).trim();
    const options = { maxTokens: 256, overlapTokens: 32 };
    expect(estimateTokens(paragraph)).toBeGreaterThan(400);
    expect(chunkDocument([{ page: null, text: paragraph }], options)).toHaveLength(1);
    // Counted one a syllable (the context estimate), the same paragraph took two chunks.
    const strict = chunkDocument([{ page: null, text: paragraph }], {
      ...options,
      hangulPerToken: 1,
    });
    expect(strict.length).toBeGreaterThanOrEqual(2);
    // English is counted as before: four characters a token.
    expect(chunkTokens('a'.repeat(400), HANGUL_PER_TOKEN)).toBe(estimateTokens('a'.repeat(400)));
  });

  it('returns no chunk for a document without text', () => {
    expect(
      chunkDocument([{ page: 1, text: '  \n\n ' }], { maxTokens: 50, overlapTokens: 5 }),
    ).toEqual([]);
  });
});

describe('lexicalTerms', () => {
  it('matches Korean words whatever particle is attached', () => {
    const passage = new Set(lexicalTerms('서울에서 열린 회의'));
    const question = lexicalTerms('서울의 회의는');
    expect(question.filter((term) => passage.has(term))).toEqual(
      expect.arrayContaining(['서울', '회의']),
    );
  });

  it('drops English stop-words and stems', () => {
    expect(lexicalTerms('The mutations of the genes')).toEqual(['mutat', 'gene']);
  });
});

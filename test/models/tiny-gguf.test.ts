import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readGgufFileInfo } from 'node-llama-cpp';
import { describe, expect, it } from 'vitest';
import { buildTinyGguf, writeTinyGguf } from '../support/tiny-gguf/make-tiny-gguf.ts';
import { scriptToTokens } from '../support/tiny-gguf/script-tokens.ts';
import { TINY_CHAT_TEMPLATE } from '../support/tiny-gguf/tiny-chat-template.ts';

// The generator itself: a valid, small, reproducible GGUF. That its scripted
// output comes out of llama.cpp is shown in embedded-llama-model.test.ts.

describe('tiny GGUF generator', () => {
  it('writes a small llama GGUF v3 that node-llama-cpp parses', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'parley-gguf-'));
    try {
      const path = join(dir, 'tiny.gguf');
      const size = await writeTinyGguf(path, { script: 'Hello from tiny llama' });
      expect(size).toBeLessThan(400_000);
      const info = await readGgufFileInfo(path, { logWarnings: false });
      expect(info.version).toBe(3);
      expect(info.metadata.general.architecture).toBe('llama');
      expect(info.metadata.tokenizer.chat_template).toBe(TINY_CHAT_TEMPLATE);
      expect(info.tensorInfo?.map((t) => t.name)).toContain('output.weight');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('is byte-for-byte reproducible', () => {
    const a = buildTinyGguf({ script: '안녕하세요, tiny llama' });
    const b = buildTinyGguf({ script: '안녕하세요, tiny llama' });
    expect(Buffer.compare(Buffer.from(a), Buffer.from(b))).toBe(0);
  });

  it('keeps special tokens whole and never repeats a token', () => {
    const [step] = scriptToTokens('<think>\nab ab ab\n</think>', ['<think>', '</think>'], 2);
    const texts = step?.tokens.map((t) => t.text) ?? [];
    expect(texts[0]).toBe('<think>');
    expect(texts.at(-1)).toBe('</think>');
    expect(new Set(texts).size).toBe(texts.length);
    expect(texts.join('')).toBe('<think>\nab ab ab\n</think>');
    expect(() => scriptToTokens('<think>ab</think><think>', ['<think>', '</think>'])).toThrow(
      /repeats the special token/,
    );
  });
});

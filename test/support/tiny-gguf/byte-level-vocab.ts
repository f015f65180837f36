// GPT-2 style byte-level token text. The tiny model uses llama.cpp's "gpt2"
// (BPE) tokenizer with the 256 byte tokens and NO merges, so any prompt text
// (Korean included) tokenizes to exactly one token per UTF-8 byte, and the
// multi-byte "script" tokens are never produced by the tokenizer itself: the
// model is the only thing that emits them.

let byteToChar: string[] | undefined;

function table(): string[] {
  if (byteToChar) return byteToChar;
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const map: string[] = new Array(256);
  for (const b of printable) map[b] = String.fromCodePoint(b);
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    if (map[b] === undefined) map[b] = String.fromCodePoint(256 + shifted++);
  }
  byteToChar = map;
  return map;
}

/** Token text of one raw byte (ids 0..255 of the tiny vocab, in byte order). */
export function byteToken(byte: number): string {
  const char = table()[byte];
  if (char === undefined) throw new Error(`not a byte: ${byte}`);
  return char;
}

/** Byte-level encoding of a UTF-8 string, as stored in tokenizer.ggml.tokens. */
export function encodeByteLevel(text: string): string {
  let out = '';
  for (const byte of new TextEncoder().encode(text)) out += byteToken(byte);
  return out;
}

import { writeFile } from 'node:fs/promises';
import { byteToken, encodeByteLevel } from './byte-level-vocab.ts';
import { type GgufTensor, type GgufValue, writeGguf } from './gguf-writer.ts';
import { type Script, type ScriptToken, scriptToTokens } from './script-tokens.ts';
import { TINY_CHAT_TEMPLATE } from './tiny-chat-template.ts';

// A real llama-architecture GGUF whose greedy output is scripted.
//
// How: every attention and FFN output projection is zero, so the residual
// stream after the last block is just the current token's embedding, and the
// next token is a fixed function of the current one (a bigram chain).
// Embeddings are one-hot "states": each token with a scripted successor has
// its own state, all other tokens share state 0, and `output.weight` maps each
// state to its successor (state 0 to the script's first token, the script's
// last token to EOS). Whatever the prompt, greedy decoding emits the script
// and then EOS. Q/K/V and FFN input weights are small deterministic noise and
// the norms are real (all ones), so llama.cpp still runs the whole
// transformer. The tokenizer is byte-level BPE without merges (see
// byte-level-vocab.ts), and the chat template is ChatML with tool calls.

/** Chat-syntax tokens, typed like the Qwen instruct GGUFs (CONTROL vs USER_DEFINED). */
export const TINY_CONTROL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;
export const TINY_USER_DEFINED_TOKENS = [
  '<think>',
  '</think>',
  '<tool_call>',
  '</tool_call>',
  '<tools>',
  '</tools>',
  '<tool_response>',
  '</tool_response>',
] as const;

export type TinyGgufOptions = {
  /**
   * Exact text the model emits before EOS; may contain the special tokens
   * above. Steps force token boundaries; see ScriptStep for `after`.
   */
  script: Script;
  /** Characters per streamed piece of plain text (default 3). */
  chunkChars?: number;
  /** general.name (default "Parley Tiny Test Model"). */
  name?: string;
  /** llama.context_length (default 4096). */
  contextLength?: number;
  /** Transformer blocks (default 2). */
  blocks?: number;
  /** Start the script over instead of emitting EOS: a model that never stops by itself. */
  loop?: boolean;
  /** Adds this many bytes of metadata, to serve files larger than one download chunk. */
  paddingBytes?: number;
};

const TOKEN_TYPE = { normal: 1, control: 3, userDefined: 4 } as const;
const HEAD_DIM = 32;
const OUTPUT_SCALE = 4; // logit margin of the scripted token: OUTPUT_SCALE * sqrt(embd)

function noise(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    // mulberry32: deterministic, so generated files are byte-identical.
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5) * 0.2;
  };
}

/** Builds the GGUF bytes for a model that greedily emits `options.script`. */
export function buildTinyGguf(options: TinyGgufOptions): Uint8Array {
  const specials = [...TINY_CONTROL_TOKENS, ...TINY_USER_DEFINED_TOKENS];
  const script = scriptToTokens(options.script, specials, options.chunkChars ?? 3);
  if (script.length === 0) throw new Error('empty script');

  const tokens: string[] = [];
  const types: number[] = [];
  for (let b = 0; b < 256; b++) {
    tokens.push(byteToken(b));
    types.push(TOKEN_TYPE.normal);
  }
  for (const t of TINY_CONTROL_TOKENS) {
    tokens.push(t);
    types.push(TOKEN_TYPE.control);
  }
  for (const t of TINY_USER_DEFINED_TOKENS) {
    tokens.push(t);
    types.push(TOKEN_TYPE.userDefined);
  }
  const eos = tokens.indexOf('<|im_end|>');
  const bos = tokens.indexOf('<|endoftext|>');
  const idOf = (t: ScriptToken): number => {
    if (t.kind === 'special') return tokens.indexOf(t.text);
    tokens.push(encodeByteLevel(t.text));
    types.push(TOKEN_TYPE.normal);
    return tokens.length - 1;
  };
  // The token the tokenizer ends `text` with: a special token, else its last byte.
  const lastTokenOf = (text: string): number => {
    const special = specials.find((s) => text.endsWith(s));
    if (special) return tokens.indexOf(special);
    const bytes = new TextEncoder().encode(text);
    const last = bytes[bytes.length - 1];
    if (last === undefined) throw new Error('empty `after` text');
    return last; // ids 0..255 are the byte tokens
  };

  const successor = new Map<number, number>();
  const link = (from: number, to: number) => {
    const known = successor.get(from);
    if (known !== undefined && known !== to) throw new Error(`token ${from} needs two successors`);
    successor.set(from, to);
  };
  let first: number | undefined;
  let previous: number | undefined;
  for (const step of script) {
    const ids = step.tokens.map(idOf);
    const head = ids[0] ?? eos;
    first ??= head;
    if (previous !== undefined) link(previous, head);
    if (step.after !== undefined) link(lastTokenOf(step.after), head);
    ids.forEach((id, i) => {
      const next = ids[i + 1];
      if (next !== undefined) link(id, next);
    });
    previous = ids.at(-1) ?? previous;
  }
  if (previous !== undefined) link(previous, options.loop ? (first ?? eos) : eos);
  const vocab = tokens.length;

  // One-hot states: state 0 for every token without a scripted successor.
  const stateOf = new Map([...successor.keys()].map((id, i) => [id, i + 1]));
  const embd = Math.max(HEAD_DIM, Math.ceil((stateOf.size + 1) / HEAD_DIM) * HEAD_DIM);
  const heads = embd / HEAD_DIM;
  const ff = embd * 2;
  const blocks = options.blocks ?? 2;

  const tokenEmbd = new Float32Array(vocab * embd);
  for (let id = 0; id < vocab; id++) tokenEmbd[id * embd + (stateOf.get(id) ?? 0)] = 1;
  const output = new Float32Array(vocab * embd);
  output[(first ?? eos) * embd] = OUTPUT_SCALE;
  for (const [from, to] of successor) output[to * embd + (stateOf.get(from) ?? 0)] = OUTPUT_SCALE;

  const rand = noise(0x7a11);
  const filled = (n: number, f: () => number) => Float32Array.from({ length: n }, f);
  const tensors: GgufTensor[] = [
    { name: 'token_embd.weight', shape: [embd, vocab], data: tokenEmbd },
    { name: 'output_norm.weight', shape: [embd], data: filled(embd, () => 1) },
    { name: 'output.weight', shape: [embd, vocab], data: output },
  ];
  for (let i = 0; i < blocks; i++) {
    const p = `blk.${i}.`;
    tensors.push(
      { name: `${p}attn_norm.weight`, shape: [embd], data: filled(embd, () => 1) },
      { name: `${p}attn_q.weight`, shape: [embd, embd], data: filled(embd * embd, rand) },
      { name: `${p}attn_k.weight`, shape: [embd, embd], data: filled(embd * embd, rand) },
      { name: `${p}attn_v.weight`, shape: [embd, embd], data: filled(embd * embd, rand) },
      { name: `${p}attn_output.weight`, shape: [embd, embd], data: new Float32Array(embd * embd) },
      { name: `${p}ffn_norm.weight`, shape: [embd], data: filled(embd, () => 1) },
      { name: `${p}ffn_gate.weight`, shape: [embd, ff], data: filled(embd * ff, rand) },
      { name: `${p}ffn_up.weight`, shape: [embd, ff], data: filled(embd * ff, rand) },
      { name: `${p}ffn_down.weight`, shape: [ff, embd], data: new Float32Array(ff * embd) },
    );
  }

  const kv = new Map<string, GgufValue>([
    ['general.architecture', { type: 'string', value: 'llama' }],
    ['general.name', { type: 'string', value: options.name ?? 'Parley Tiny Test Model' }],
    ['general.file_type', { type: 'u32', value: 0 }], // all F32
    ['general.alignment', { type: 'u32', value: 32 }],
    ['llama.context_length', { type: 'u32', value: options.contextLength ?? 4096 }],
    ['llama.embedding_length', { type: 'u32', value: embd }],
    ['llama.block_count', { type: 'u32', value: blocks }],
    ['llama.feed_forward_length', { type: 'u32', value: ff }],
    ['llama.rope.dimension_count', { type: 'u32', value: HEAD_DIM }],
    ['llama.rope.freq_base', { type: 'f32', value: 10000 }],
    ['llama.attention.head_count', { type: 'u32', value: heads }],
    ['llama.attention.head_count_kv', { type: 'u32', value: heads }],
    ['llama.attention.layer_norm_rms_epsilon', { type: 'f32', value: 1e-6 }],
    ['llama.vocab_size', { type: 'u32', value: vocab }],
    ['tokenizer.ggml.model', { type: 'string', value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: 'string', value: 'default' }],
    ['tokenizer.ggml.tokens', { type: 'string[]', value: tokens }],
    ['tokenizer.ggml.token_type', { type: 'i32[]', value: types }],
    ['tokenizer.ggml.merges', { type: 'string[]', value: [] }],
    ['tokenizer.ggml.bos_token_id', { type: 'u32', value: bos }],
    ['tokenizer.ggml.eos_token_id', { type: 'u32', value: eos }],
    ['tokenizer.ggml.padding_token_id', { type: 'u32', value: bos }],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: false }],
    ['tokenizer.chat_template', { type: 'string', value: TINY_CHAT_TEMPLATE }],
  ]);
  if (options.paddingBytes) {
    kv.set('parley.padding', { type: 'string', value: ' '.repeat(options.paddingBytes) });
  }
  return writeGguf(kv, tensors);
}

/** Writes a scripted tiny model to `path`; returns its size in bytes. */
export async function writeTinyGguf(path: string, options: TinyGgufOptions): Promise<number> {
  const bytes = buildTinyGguf(options);
  await writeFile(path, bytes);
  return bytes.length;
}

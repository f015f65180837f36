import { estimateTokens } from './chat-completion.ts';

/**
 * A deterministic stand-in for an embedding model: a signed, hashed bag of words,
 * L2-normalised. Texts sharing words get a positive cosine similarity, so retrieval
 * tests can rank without a real model; equal texts always get equal vectors.
 */
export function embedText(text: string, dimension: number): number[] {
  const vector = new Array<number>(dimension).fill(0);
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [''];
  for (const word of words) {
    const hash = fnv1a(word);
    const slot = hash % dimension;
    // A second bit of the hash picks the sign, so unrelated words cancel out on average.
    vector[slot] = (vector[slot] ?? 0) + ((hash >>> 31) & 1 ? -1 : 1);
  }
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector : vector.map((x) => x / norm);
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/**
 * The `POST /v1/embeddings` answer for a request body, in OpenAI's shape; undefined when
 * the body is not a valid request. Honours `dimensions` and `encoding_format: 'base64'`;
 * `embed` (default: the hashed bag of words) makes the vectors.
 */
export function embeddingsResponse(
  body: unknown,
  defaultDimension: number,
  embed: (text: string, dimension: number) => number[] = embedText,
): object | undefined {
  const request = body as
    | { model?: unknown; input?: unknown; dimensions?: unknown; encoding_format?: unknown }
    | undefined;
  const inputs = embeddingInputs(request?.input);
  if (typeof request?.model !== 'string' || inputs === undefined) return undefined;
  const dimension = typeof request.dimensions === 'number' ? request.dimensions : defaultDimension;
  const data = inputs.map((text, index) => {
    const vector = embed(text, dimension);
    const embedding = request.encoding_format === 'base64' ? toBase64(vector) : vector;
    return { object: 'embedding', index, embedding };
  });
  const tokens = inputs.reduce((sum, text) => sum + estimateTokens(text), 0);
  return {
    object: 'list',
    data,
    model: request.model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  };
}

/** OpenAI's `encoding_format: 'base64'`: little-endian float32 bytes. */
function toBase64(vector: readonly number[]): string {
  return Buffer.from(new Float32Array(vector).buffer).toString('base64');
}

/** Normalises the `input` field (a string, strings, or token arrays) to one text per item. */
export function embeddingInputs(input: unknown): string[] | undefined {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) return undefined;
  if (input.every((item) => typeof item === 'number')) return [input.join(' ')];
  if (input.every((item) => typeof item === 'string')) return input;
  if (input.every((item) => Array.isArray(item))) return input.map((tokens) => tokens.join(' '));
  return undefined;
}

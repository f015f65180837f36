// Splits what a tiny model must emit into the tokens it will emit.
// Special tokens (e.g. `<tool_call>`) stay single tokens, because node-llama-cpp
// detects chat-wrapper syntax on those exact tokens; the plain text between
// them is cut into short pieces so the output streams as several deltas.
// Each emitted token may occur only once: the model is a bigram chain, so a
// repeated token would need two different successors.

export type ScriptToken = { kind: 'special'; text: string } | { kind: 'piece'; text: string };

/**
 * One stretch of output. `after` is text that node-llama-cpp writes into the
 * context itself right before this step (it re-tokenizes chat syntax such as
 * a function-call prefix when it switches grammars), so the model must also
 * continue with `text` from the last token of `after`. A last step with an
 * empty `text` means "EOS after `after`".
 */
export type ScriptStep = { text: string; after?: string };

export type Script = string | readonly (string | ScriptStep)[];

export type TokenizedStep = { tokens: ScriptToken[]; after?: string };

function splitSpecials(text: string, specials: readonly string[]): ScriptToken[] {
  const bySize = [...specials].sort((a, b) => b.length - a.length);
  const out: ScriptToken[] = [];
  let plain = '';
  let i = 0;
  while (i < text.length) {
    const special = bySize.find((s) => text.startsWith(s, i));
    if (special) {
      if (plain) out.push({ kind: 'piece', text: plain });
      plain = '';
      out.push({ kind: 'special', text: special });
      i += special.length;
    } else {
      plain += text[i];
      i++;
    }
  }
  if (plain) out.push({ kind: 'piece', text: plain });
  return out;
}

function chunk(segment: string, chunkChars: number, used: Set<string>): string[] {
  const chars = [...segment]; // code points: never split a character's UTF-8 bytes
  const pieces: string[] = [];
  let at = 0;
  while (at < chars.length) {
    let size = Math.min(chunkChars, chars.length - at);
    // Grow a piece until it is unique, or swallow a one-character tail.
    while (
      at + size < chars.length &&
      (used.has(chars.slice(at, at + size).join('')) || chars.length - (at + size) < 2)
    ) {
      size++;
    }
    const piece = chars.slice(at, at + size).join('');
    if (used.has(piece)) throw new Error(`script repeats the piece ${JSON.stringify(piece)}`);
    used.add(piece);
    pieces.push(piece);
    at += size;
  }
  return pieces;
}

/**
 * Tokenizes a script. Steps never share a token, so token boundaries fall on
 * step boundaries (node-llama-cpp's grammars start there). Plain pieces are at
 * least two bytes long, so none is one of the 256 byte tokens the tokenizer
 * produces for prompts: the prompt's last token stays outside the chain.
 */
export function scriptToTokens(
  script: Script,
  specials: readonly string[],
  chunkChars = 3,
): TokenizedStep[] {
  const used = new Set<string>();
  const steps = typeof script === 'string' ? [script] : script;
  return steps.map((raw, index) => {
    const step: ScriptStep = typeof raw === 'string' ? { text: raw } : raw;
    if (step.text === '' && (step.after === undefined || index !== steps.length - 1)) {
      throw new Error('only a last step with `after` may be empty');
    }
    const tokens: ScriptToken[] = [];
    for (const part of splitSpecials(step.text, specials)) {
      if (part.kind === 'special') {
        if (used.has(part.text)) throw new Error(`script repeats the special token ${part.text}`);
        used.add(part.text);
        tokens.push(part);
        continue;
      }
      if (new TextEncoder().encode(part.text).length < 2) {
        throw new Error(`text ${JSON.stringify(part.text)} between special tokens is too short`);
      }
      for (const text of chunk(part.text, chunkChars, used)) tokens.push({ kind: 'piece', text });
    }
    return step.after === undefined ? { tokens } : { tokens, after: step.after };
  });
}

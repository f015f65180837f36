import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';

type Part = LanguageModelV4StreamPart;

/** Where one text part stands: inside or outside a reasoning block, and what is held back. */
interface TextState {
  reasoning: boolean;
  /** Text that may be the start of the next tag, held until the next delta tells. */
  held: string;
  /** Whether the text, or the reasoning, has published nothing yet. */
  firstText: boolean;
  firstReasoning: boolean;
  /** Just crossed a tag: the next piece of the same kind is set apart by a line break. */
  afterSwitch: boolean;
  reasoningId: string | undefined;
}

/**
 * Splits the reasoning a model writes inside its text (`<think>…</think>`) out of its stream
 * parts, one part at a time: the same parts, in the same order, as the AI SDK's
 * `extractReasoningMiddleware` gives for a stream (test/models/reasoning-tag-splitter.test.ts
 * replays every recorded provider stream through both).
 *
 * Why not the middleware: it is one more web-stream stage on every token of every chat, and
 * the chat's tool loop reads the provider's parts one by one anyway (bench/RESULTS.md, issue
 * 12). The middleware stays where a whole answer is generated (query rewriting, memory).
 *
 * One splitter serves one model call.
 */
export class ReasoningTagSplitter {
  readonly #opening: string;
  readonly #closing: string;
  #reasoningCount = 0;
  /** Text parts whose start waits for their first text, so reasoning read first comes first. */
  readonly #heldStarts = new Map<string, Part>();
  readonly #texts = new Map<string, TextState>();

  constructor(tagName: string) {
    this.#opening = `<${tagName}>`;
    this.#closing = `</${tagName}>`;
  }

  /** The parts that `part` becomes (none while a text start or a possible tag is held). */
  split(part: Part): Part[] {
    if (part.type === 'text-start') {
      this.#heldStarts.set(part.id, part);
      return [];
    }
    if (part.type !== 'text-delta' && part.type !== 'text-end') return [part];
    const out: Part[] = [];
    if (part.type === 'text-end') {
      const state = this.#texts.get(part.id);
      if (state) this.#publish(part.id, state, state.held, out);
      this.#releaseStart(part.id, out);
      out.push(part);
      this.#texts.delete(part.id);
      return out;
    }
    let state = this.#texts.get(part.id);
    if (!state) {
      state = {
        reasoning: false,
        held: '',
        firstText: true,
        firstReasoning: true,
        afterSwitch: false,
        reasoningId: undefined,
      };
      this.#texts.set(part.id, state);
    }
    let text = state.held + part.delta;
    for (;;) {
      const tag = state.reasoning ? this.#closing : this.#opening;
      const at = potentialStart(text, tag);
      if (at === -1) {
        this.#publish(part.id, state, text, out);
        state.held = '';
        return out;
      }
      this.#publish(part.id, state, text.slice(0, at), out);
      if (at + tag.length > text.length) {
        state.held = text.slice(at); // maybe a tag, cut by the delta's end
        return out;
      }
      text = text.slice(at + tag.length);
      if (state.reasoning) {
        const id = this.#reasoningId(state);
        if (state.firstReasoning) out.push({ type: 'reasoning-start', id });
        out.push({ type: 'reasoning-end', id });
        state.reasoningId = undefined;
      }
      state.reasoning = !state.reasoning;
      state.afterSwitch = true;
    }
  }

  #publish(textId: string, state: TextState, text: string, out: Part[]): void {
    if (text.length === 0) return;
    const first = state.reasoning ? state.firstReasoning : state.firstText;
    const delta = state.afterSwitch && !first ? `\n${text}` : text;
    if (state.reasoning) {
      const id = this.#reasoningId(state);
      if (state.afterSwitch || state.firstReasoning) out.push({ type: 'reasoning-start', id });
      out.push({ type: 'reasoning-delta', id, delta });
      state.firstReasoning = false;
    } else {
      this.#releaseStart(textId, out);
      out.push({ type: 'text-delta', id: textId, delta });
      state.firstText = false;
    }
    state.afterSwitch = false;
  }

  #releaseStart(textId: string, out: Part[]): void {
    const start = this.#heldStarts.get(textId);
    if (!start) return;
    this.#heldStarts.delete(textId);
    out.push(start);
  }

  #reasoningId(state: TextState): string {
    state.reasoningId ??= `reasoning-${this.#reasoningCount++}`;
    return state.reasoningId;
  }
}

/**
 * Where `tag` starts in `text`, or else where the shortest suffix of `text` that could begin
 * it starts (as the middleware looks); -1 if neither.
 */
function potentialStart(text: string, tag: string): number {
  const at = text.indexOf(tag);
  if (at !== -1) return at;
  const first = tag.charCodeAt(0);
  for (let i = text.length - 1; i >= Math.max(0, text.length - tag.length + 1); i--) {
    // Checked by its first character before anything is cut: this runs on every token.
    if (text.charCodeAt(i) === first && tag.startsWith(text.slice(i))) return i;
  }
  return -1;
}

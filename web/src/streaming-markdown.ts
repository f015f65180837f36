import type { Token } from 'marked';

/** One finished Markdown block of an answer, drawn once: its key never changes. */
export interface Block {
  key: number;
  html: string;
}

export interface Drawn {
  /** The finished blocks, oldest first; a block once here is never drawn again. */
  done: readonly Block[];
  /** The block still growing (and anything after it), drawn anew each time. */
  tail: string;
}

/**
 * An answer that grows while it streams, cut into Markdown blocks so that a redraw costs the
 * last block, not the whole answer. Re-parsing and re-sanitizing everything on every redraw
 * made a 1,500-token answer at 100 tokens a second cost 37–61 main-thread tasks over 50 ms
 * (bench/web-long-tasks.ts); drawing a finished block once keeps each redraw small.
 *
 * A block is finished once a blank line (marked's `space` token) and a whole line of a later
 * block follow it: lexing the rest from there gives the tokens lexing the whole would (no block
 * rule of marked's looks back past a blank line, except a list taking a new item, which the
 * whole line settles; a list or a fenced code block that spans a blank line is one token and
 * stays the growing one). test/web/streaming-markdown.test.ts checks this at every cut. The one
 * thing lost: a reference-style link whose definition comes in a later block stays text.
 */
export class StreamingMarkdown {
  readonly #lex: (markdown: string) => Token[];
  readonly #render: (tokens: Token[]) => string;
  /** The start of the answer that the finished blocks cover. */
  #finished = '';
  #done: Block[] = [];
  #nextKey = 0;

  /** `render` turns tokens into safe HTML (sanitized); `lex` is marked's lexer. */
  constructor(lex: (markdown: string) => Token[], render: (tokens: Token[]) => string) {
    this.#lex = lex;
    this.#render = render;
  }

  /** Draws `text`, which usually extends the text drawn last; anything else starts over. */
  draw(text: string): Drawn {
    if (!text.startsWith(this.#finished)) {
      this.#finished = '';
      this.#done = [];
    }
    const rest = text.slice(this.#finished.length);
    const tokens = this.#lex(rest);
    let growing = tokens.length - 1;
    while (growing >= 0 && tokens[growing]?.type === 'space') growing--;

    // Finished: everything up to the last blank line before the growing block, once the line
    // after that blank line is whole ("2" may yet be "2." and continue a list above it). Each
    // token's `raw` is checked against the text: a lexer that rewrote one stops the cut there.
    const lastLineEnd = rest.lastIndexOf('\n');
    let offset = 0;
    let cut = 0;
    let cutTokens = 0;
    for (let i = 0; i < growing; i++) {
      const raw = (tokens[i] as Token).raw;
      if (!rest.startsWith(raw, offset)) break;
      offset += raw.length;
      if (offset > lastLineEnd) break;
      if (tokens[i]?.type === 'space') {
        cut = offset;
        cutTokens = i + 1;
      }
    }
    if (cutTokens > 0) {
      const finished = tokens.slice(0, cutTokens).filter((token) => token.type !== 'space');
      this.#done = [
        ...this.#done,
        ...finished.map((token) => ({ key: this.#nextKey++, html: this.#render([token]) })),
      ];
      this.#finished += rest.slice(0, cut);
    }
    return { done: this.#done, tail: this.#render(tokens.slice(cutTokens)) };
  }
}

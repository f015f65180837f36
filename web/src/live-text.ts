/**
 * The text of an answer while it streams. Only the view of that answer subscribes, so a redraw
 * renders that answer alone: neither the chat page nor the finished turns run again for a
 * token (re-rendering the whole conversation cost most of a redraw's script time).
 */
export class LiveText {
  #text = '';
  readonly #listeners = new Set<() => void>();

  get text(): string {
    return this.#text;
  }

  set(text: string): void {
    if (text === this.#text) return;
    this.#text = text;
    for (const listener of this.#listeners) listener();
  }

  /** Calls `listener` after each change; returns the way to stop. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

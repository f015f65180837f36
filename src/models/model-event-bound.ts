import type { BodyTransform } from './http-fetch.ts';

/**
 * The largest SSE event Parley reads from the model server. A real one is a token or a piece
 * of a tool call's arguments, a few kB at most (the largest of the recorded streams in
 * shared/data/llm-streams is 759 bytes); one that
 * never ends (a broken proxy, garbage without newlines, one `data:` line without its end) was
 * read into memory for as long as it came, holding the answer open and, parsed again on every
 * read, a CPU. Past this the answer ends as one whose connection broke does, with its own
 * error; nobody needs more, so it is not a setting. A body that is not an event stream (a
 * non-streamed answer, or a stream under another content type) counts as one event up to its
 * first blank line.
 */
export const MODEL_EVENT_MAX_BYTES = 4 * 1024 * 1024;

/** The model server sent an event over MODEL_EVENT_MAX_BYTES; Parley stopped reading it. */
export class ModelEventTooLargeError extends Error {
  override readonly name = 'ModelEventTooLargeError';
  /** What the log shows of it (never a byte of the event). */
  readonly code = 'model_event_too_large';

  constructor() {
    super(`the model server sent an event over ${MODEL_EVENT_MAX_BYTES} bytes without ending it`);
  }
}

/**
 * Counts the bytes of the event under way, over any line framing SSE allows (`\n`, `\r\n`,
 * `\r`; a blank line ends an event), and throws once it is over MODEL_EVENT_MAX_BYTES.
 */
export class EventSizeCounter {
  #size = 0;
  /** At the start of a line: a line ending here makes a blank line. */
  #lineStart = true;
  /** The last byte was `\r`: a `\n` now completes it and ends no other line. */
  #afterCr = false;

  /** Adds bytes that follow those added before; the event under way is measured after them. */
  add(bytes: Uint8Array): void {
    let size = this.#size;
    let lineStart = this.#lineStart;
    let afterCr = this.#afterCr;
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i];
      size++;
      if (byte === 10 || byte === 13) {
        if (byte === 10 && afterCr) {
          afterCr = false;
          continue;
        }
        afterCr = byte === 13;
        if (lineStart) size = 0;
        else lineStart = true;
      } else {
        lineStart = false;
        afterCr = false;
      }
    }
    this.#size = size;
    this.#lineStart = lineStart;
    this.#afterCr = afterCr;
    if (size > MODEL_EVENT_MAX_BYTES) throw new ModelEventTooLargeError();
  }
}

/** A body passed on unchanged, as long as none of its events is too large. */
export function createEventBound(): BodyTransform {
  const counter = new EventSizeCounter();
  return {
    chunk(bytes) {
      counter.add(bytes);
      return bytes;
    },
    end: () => undefined,
  };
}

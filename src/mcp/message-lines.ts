import { deserializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { MESSAGE_MAX_BYTES } from './answer-too-large.ts';

/** Bytes kept of each end of a message too long to read, to find whose answer it was. */
const EDGE_BYTES = 256;

/** What one line of a server's stdout was. */
export type LineOutcome =
  | { message: JSONRPCMessage }
  | { error: Error }
  /** Longer than MESSAGE_MAX_BYTES: skipped, its ends kept (they may carry its id). */
  | { oversized: { bytes: number; head: string; tail: string } };

/**
 * A stdio server's stdout cut into JSON-RPC messages, one a line. The SDK's ReadBuffer, on a
 * line over its limit, throws, forgets what it had and then reads the rest of that line as
 * a message of its own: the answer is lost without a word and its call waits out its
 * timeout. Here a line over the limit is skipped to its end and reported, so the transport
 * can answer its request at once; the chunks of a line are joined once, at its end.
 */
export class MessageLines {
  #chunks: Buffer[] = [];
  #bytes = 0;
  /** The line under way is over the limit: its first and last bytes only. */
  #skipping: { head: Buffer; tail: Buffer } | undefined;

  push(chunk: Buffer): LineOutcome[] {
    const outcomes: LineOutcome[] = [];
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(0x0a, start);
      this.#add(chunk.subarray(start, end === -1 ? chunk.length : end));
      if (end === -1) return outcomes;
      const outcome = this.#endLine();
      if (outcome) outcomes.push(outcome);
      start = end + 1;
    }
  }

  #add(piece: Buffer): void {
    if (piece.length === 0) return;
    this.#bytes += piece.length;
    if (this.#skipping) {
      this.#skipping.tail = Buffer.concat([this.#skipping.tail, piece]).subarray(-EDGE_BYTES);
      return;
    }
    this.#chunks.push(piece);
    if (this.#bytes > MESSAGE_MAX_BYTES) {
      const line = Buffer.concat(this.#chunks);
      this.#skipping = { head: line.subarray(0, EDGE_BYTES), tail: line.subarray(-EDGE_BYTES) };
      this.#chunks = [];
    }
  }

  #endLine(): LineOutcome | undefined {
    const bytes = this.#bytes;
    const skipped = this.#skipping;
    const chunks = this.#chunks;
    this.#chunks = [];
    this.#bytes = 0;
    this.#skipping = undefined;
    if (skipped) {
      return {
        oversized: {
          bytes,
          head: skipped.head.toString('utf8'),
          tail: Buffer.from(skipped.tail).toString('utf8'),
        },
      };
    }
    const line = Buffer.concat(chunks).toString('utf8').replace(/\r$/, '');
    if (line === '') return undefined;
    try {
      return { message: deserializeMessage(line) };
    } catch (error) {
      return { error: error as Error };
    }
  }
}

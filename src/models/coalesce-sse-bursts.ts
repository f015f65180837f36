import type { BodyTransform } from './http-fetch.ts';
import {
  EventSizeCounter,
  MODEL_EVENT_MAX_BYTES,
  ModelEventTooLargeError,
} from './model-event-bound.ts';

/**
 * Merges the text deltas of an OpenAI-style chat-completions stream that arrive together.
 *
 * Why: every chunk then goes through the provider's web-stream stages (text decoding, SSE
 * parsing, JSON parsing and validation, the provider's own transform), the costliest part of
 * a token on the main thread (bench/RESULTS.md). A model paced like a human reader
 * sends one token per network read, and nothing changes for it. When tokens arrive faster
 * than Parley forwards them (a fast model server, or a busy event loop under load), several
 * complete events sit in one read; merging them there means the backlog costs one pass
 * through the SDK instead of one per token, so Parley catches up instead of falling further
 * behind. The text is unchanged: only where one fragment ends and the next begins.
 *
 * Only plain deltas are merged: one choice, only `content`, `reasoning_content` or
 * `reasoning` text, no finish reason, usage, log-probabilities, refusal or field this code
 * does not know. Everything else (tool-call deltas, usage, `[DONE]`, comments, malformed
 * data) passes through byte for byte, in order.
 */

/** Fields of a chunk that may differ between merged chunks; only the first one's is kept. */
const KNOWN_CHUNK_FIELDS = new Set([
  'id',
  'object',
  'created',
  'model',
  'system_fingerprint',
  'service_tier',
  'choices',
  'usage',
  'obfuscation',
]);
const KNOWN_CHOICE_FIELDS = new Set(['index', 'delta', 'finish_reason', 'logprobs']);
const TEXT_FIELDS = ['content', 'reasoning_content', 'reasoning'] as const;
const KNOWN_DELTA_FIELDS = new Set<string>(['role', 'refusal', ...TEXT_FIELDS]);

type TextField = (typeof TEXT_FIELDS)[number];
type Chunk = { id?: unknown; model?: unknown; choices: [Choice] } & Record<string, unknown>;
type Choice = { index?: unknown; delta: Record<string, unknown> };

interface Mergeable {
  chunk: Chunk;
  field: TextField;
  text: string;
}

/**
 * Given complete SSE events (without their blank-line terminator), returns the events to
 * send, with each run of consecutive mergeable deltas replaced by one.
 */
export function coalesceEvents(events: readonly string[]): string[] {
  if (events.length < 2) return [...events];
  const out: string[] = [];
  let run: Mergeable | undefined;
  let runEvent = '';
  let runLength = 0;
  const endRun = () => {
    if (!run) return;
    if (runLength === 1) {
      out.push(runEvent);
    } else {
      run.chunk.choices[0].delta[run.field] = run.text;
      out.push(`data: ${JSON.stringify(run.chunk)}`);
    }
    run = undefined;
  };
  for (const event of events) {
    const next = mergeable(event);
    if (run && next && sameStream(run, next)) {
      run.text += next.text;
      runLength++;
      continue;
    }
    endRun();
    if (next) {
      run = next;
      runEvent = event;
      runLength = 1;
    } else {
      out.push(event);
    }
  }
  endRun();
  return out;
}

function sameStream(a: Mergeable, b: Mergeable): boolean {
  return (
    a.field === b.field &&
    a.chunk.id === b.chunk.id &&
    a.chunk.model === b.chunk.model &&
    a.chunk.choices[0].index === b.chunk.choices[0].index
  );
}

/** The event's delta if it is a plain text delta that can be merged with its neighbours. */
function mergeable(event: string): Mergeable | undefined {
  if (!event.startsWith('data:') || event.includes('\n')) return undefined;
  const data = event.slice(event.charCodeAt(5) === 32 ? 6 : 5);
  if (data.charCodeAt(0) !== 123 /* { */) return undefined;
  let chunk: unknown;
  try {
    chunk = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (!isPlainObject(chunk) || !onlyKnown(chunk, KNOWN_CHUNK_FIELDS)) return undefined;
  if (chunk.usage != null || !Array.isArray(chunk.choices) || chunk.choices.length !== 1) {
    return undefined;
  }
  const choice: unknown = chunk.choices[0];
  if (!isPlainObject(choice) || !onlyKnown(choice, KNOWN_CHOICE_FIELDS)) return undefined;
  if (choice.finish_reason != null || choice.logprobs != null) return undefined;
  const delta = choice.delta;
  if (!isPlainObject(delta) || !onlyKnown(delta, KNOWN_DELTA_FIELDS)) return undefined;
  if (delta.refusal != null || (delta.role != null && delta.role !== 'assistant')) {
    return undefined;
  }
  let field: TextField | undefined;
  for (const name of TEXT_FIELDS) {
    const value = delta[name];
    if (value == null) continue;
    if (typeof value !== 'string' || field) return undefined; // two kinds of text: keep apart
    field = name;
  }
  if (!field) return undefined;
  return { chunk: chunk as Chunk, field, text: delta[field] as string };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function onlyKnown(value: Record<string, unknown>, known: Set<string>): boolean {
  for (const key in value) if (!known.has(key)) return false;
  return true;
}

/**
 * Applies {@link coalesceEvents} to the events complete in each read of a response body (see
 * http-fetch.ts, which calls it on every network read, before the body becomes a web stream).
 * An event cut by a read boundary waits for its end (the SSE parser downstream would wait for
 * it too), up to MODEL_EVENT_MAX_BYTES: past that, a read throws ModelEventTooLargeError.
 * Streams framed with `\r` are passed through untouched from the first `\r` on, since their
 * event boundaries are not the `\n\n` this splits on; their events are bounded alike.
 *
 * Only the new read is searched for an event's end, so an event arriving in many reads costs
 * its length once, not once per read.
 */
export function createSseBurstMerger(): BodyTransform {
  const decoder = new TextDecoder();
  /** The event under way, from its first byte (never a `\r`: see above). */
  let pending = '';
  let pendingBytes = 0;
  let pendingEndsInNewline = false;
  let passThrough: EventSizeCounter | undefined;
  return {
    chunk(bytes) {
      if (passThrough) {
        passThrough.add(bytes);
        return bytes;
      }
      const decoded = decoder.decode(bytes, { stream: true });
      if (decoded.includes('\r')) {
        passThrough = new EventSizeCounter();
        const out = Buffer.from(pending + decoded);
        pending = '';
        passThrough.add(out);
        return out;
      }
      let end = decoded.lastIndexOf('\n\n');
      if (end !== -1) end += pending.length;
      else if (pending && pendingEndsInNewline && decoded.charCodeAt(0) === 10) {
        end = pending.length - 1;
      }
      if (decoded.length > 0) pendingEndsInNewline = decoded.charCodeAt(decoded.length - 1) === 10;
      if (end === -1) {
        pending += decoded;
        pendingBytes += bytes.byteLength;
        if (pendingBytes > MODEL_EVENT_MAX_BYTES) throw new ModelEventTooLargeError();
        return undefined;
      }
      const text = pending + decoded;
      pending = text.slice(end + 2);
      pendingBytes = Buffer.byteLength(pending);
      if (pendingBytes > MODEL_EVENT_MAX_BYTES) throw new ModelEventTooLargeError();
      const events = coalesceEvents(text.slice(0, end).split('\n\n'));
      return Buffer.from(`${events.join('\n\n')}\n\n`);
    },
    end() {
      const rest = pending + decoder.decode();
      pending = '';
      return rest ? Buffer.from(rest) : undefined;
    },
  };
}

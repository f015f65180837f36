import type { ServerResponse } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { ChatEvent } from '../assistant/chat-events.ts';

/**
 * Server-sent-event framing of the chat stream (spec §6). Each fragment is `data: <JSON
 * string>` with non-ASCII written as is (JSON.stringify never escapes it, and it escapes the
 * line breaks SSE would split on). The end is the object form with the run id, then the
 * literal `[DONE]` that the first form of the stream ended with, so both kinds of client
 * stop cleanly.
 */
export function encodeEvent(event: ChatEvent): string {
  switch (event.type) {
    case 'text':
      return `data: ${JSON.stringify(event.text)}\n\n`;
    case 'reasoning':
      return ''; // POST /chat asks for reasoning as <think> fragments: never sent to it
    case 'error':
      return `data: ${JSON.stringify({ __error: { code: event.code, message: event.message } })}\n\n`;
    case 'done':
      return `data: ${JSON.stringify({ __done: true, run_id: event.runId, ...(event.stopped && { stopped: true }) })}\n\ndata: [DONE]\n\n`;
    // Only a client that asked for approvals ('ask') is sent these (issue 33).
    case 'approval':
      return `data: ${JSON.stringify({ __approval: event.approval })}\n\n`;
    case 'approval-decided':
      return `data: ${JSON.stringify({ __approval_decided: { id: event.id, decision: event.decision } })}\n\n`;
  }
}

/**
 * A resumable run's event (`"resumable": true`): the same framing, with the event's number in
 * the run's log as its SSE `id:`, which a client that comes back sends as `Last-Event-ID` (or
 * `?after=`). The `[DONE]` after `__done` carries none: it repeats the end, so a client that
 * saw `__done` and resumes from its id gets `[DONE]` alone.
 */
export function encodeNumberedEvent(numbered: { seq: number; event: ChatEvent }): string {
  const data = encodeEvent(numbered.event);
  return data === '' ? '' : `id: ${numbered.seq}\n${data}`;
}

/** The end of a resumed stream whose run had already ended where the client resumed. */
export const DONE_ONLY = 'data: [DONE]\n\n';

/** A comment line: clients ignore it, proxies see traffic and keep the connection open. */
export const KEEP_ALIVE = ': ping\n\n';

/**
 * A fragment is held back at most this long to share a socket write with the ones after it.
 * Node's HTTP response corks its socket on a write until the end of the tick; a burst of
 * tokens (a model faster than the network, or a backlog read in one go) is processed in one
 * long run of microtasks, so without a bound the first fragment of a burst would wait for the
 * last one.
 */
const MAX_HOLD_MS = 2;

/**
 * Pumps events into a body stream (framed by `encode`: the spec's by default, or another
 * door's), adding a keep-alive comment after `keepAliveMs` of
 * silence (while a user's previous chat finishes, or a model thinks before its first token).
 *
 * This is the per-token hot path, so it does the least per event: one write, no timer or
 * promise per event (one interval checks for silence). A fragment after a silence is sent at
 * once; the ones right behind it share a socket write, sent at the end of the tick or after
 * MAX_HOLD_MS, whichever comes first.
 */
export function toSseBody(
  events: AsyncIterable<ChatEvent>,
  keepAliveMs: number,
  response: ServerResponse,
  encode?: (event: ChatEvent) => string,
): Readable;
export function toSseBody<T>(
  events: AsyncIterable<T>,
  keepAliveMs: number,
  response: ServerResponse,
  encode: (event: T) => string,
): Readable;
export function toSseBody(
  events: AsyncIterable<unknown>,
  keepAliveMs: number,
  response: ServerResponse,
  encode: (event: never) => string = encodeEvent,
): Readable {
  const body = new PassThrough();
  // Node sends the headers with the first write; send them as soon as the framework has set
  // them (it pipes the body just after), so a client whose answer must wait (the user's
  // previous chat, a model being loaded) knows at once that its stream was accepted.
  response.once('pipe', () => response.flushHeaders());
  let lastWrite = performance.now();
  /** When the oldest fragment still waiting in the corked socket was written. */
  let heldSince: number | undefined;
  const released = () => {
    heldSince = undefined;
  };
  const write = (chunk: string) => {
    const now = performance.now();
    const inBurst = now - lastWrite < MAX_HOLD_MS;
    lastWrite = now;
    body.write(chunk); // reaches the response, and its socket, synchronously
    if (!inBurst || (heldSince !== undefined && now - heldSince >= MAX_HOLD_MS)) {
      const socket = response.socket;
      while (socket?.writableCorked) socket.uncork();
      heldSince = undefined;
    } else if (heldSince === undefined) {
      heldSince = now;
      process.nextTick(released); // Node uncorks the socket at the end of this tick
    }
  };
  const keepAlive = setInterval(
    () => {
      if (performance.now() - lastWrite >= keepAliveMs) write(KEEP_ALIVE);
    },
    Math.max(50, Math.floor(keepAliveMs / 4)),
  );

  (async () => {
    try {
      for await (const event of events) {
        if (body.destroyed) break;
        write(encode(event as never));
      }
    } finally {
      clearInterval(keepAlive);
      body.end();
    }
  })().catch((error: unknown) => body.destroy(error as Error));

  body.on('close', () => clearInterval(keepAlive));
  return body;
}

/**
 * Sends a streamed answer with the headers every door's event stream needs: no caching, and
 * no buffering by a proxy in front (nginx reads `X-Accel-Buffering`).
 */
export function sendEventStream(reply: FastifyReply, body: Readable): FastifyReply {
  return reply
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache')
    .header('x-accel-buffering', 'no')
    .send(body);
}

import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { endBody } from '../body-endings.ts';
import { sendJson } from '../fake-http.ts';
import type { EndlessEvent, StreamFaults } from './reply.ts';

/** How a writer tells the server it dropped the socket on purpose (not the client). */
export interface WriteControl {
  /** Aborted once the response is closed, so delays stop early. */
  signal: AbortSignal;
  dropConnection(): void;
  /** Counts bytes of a never-ending event written (see `ChatExchange.endlessBytes`). */
  sentEndless(bytes: number): void;
}

// Truncated JSON, as a proxy or a crashing provider might emit it.
const malformedLine =
  'data: {"id":"chatcmpl-broken","object":"chat.completion.chunk","choices":[{"delta":\n\n';

/** Writes the payloads as OpenAI SSE (`data: <json>\n\n` … `data: [DONE]\n\n`), applying the faults. */
export async function writeSse(
  res: ServerResponse,
  payloads: readonly string[],
  faults: StreamFaults,
  control: WriteControl,
): Promise<void> {
  if (faults.silent) return;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  res.flushHeaders();
  let textWritten = '';
  for (let written = 0; ; written++) {
    if (faults.disconnectAfter === written) {
      const next = Buffer.from(`data: ${payloads[written] ?? '[DONE]'}\n\n`);
      if (faults.cutInsideEvent) res.write(next.subarray(0, next.length >> 1));
      return control.dropConnection(); // after what was written is flushed
    }
    if (faults.stallAfter === written) return;
    if (faults.endlessEvent?.after === written) {
      return writeEndless(res, faults.endlessEvent, control);
    }
    if (faults.malformedAfter === written) res.write(malformedLine);
    const payload = payloads[written];
    if (payload === undefined) break;
    if (!(await pause(faults.delayMs, control.signal))) return;
    if (faults.pace) await faults.pace(textWritten);
    if (control.signal.aborted) return;
    res.write(`data: ${payload}\n\n`);
    if (faults.pace) textWritten += contentOf(payload);
  }
  res.end('data: [DONE]\n\n');
}

/** Writes one event that never ends, piece after piece, until the response is closed. */
async function writeEndless(
  res: ServerResponse,
  endless: EndlessEvent,
  control: WriteControl,
): Promise<void> {
  const fill = (byte: number) => Buffer.alloc(endless.pieceBytes, byte);
  const pieces: Record<EndlessEvent['kind'], [opening: string, piece: Buffer]> = {
    line: [
      'data: {"id":"chatcmpl-endless","object":"chat.completion.chunk","created":1,"model":"m",' +
        '"choices":[{"index":0,"delta":{"content":"',
      fill(0x61),
    ],
    lines: ['', Buffer.concat([Buffer.from('data: '), fill(0x61).subarray(7), Buffer.from('\n')])],
    garbage: [
      '',
      Buffer.from(Array.from({ length: endless.pieceBytes }, (_, i) => 0x80 + (i % 0x70))),
    ],
    'cr-lines': [
      '',
      Buffer.concat([Buffer.from('data: '), fill(0x61).subarray(7), Buffer.from('\r')]),
    ],
  };
  const [opening, piece] = pieces[endless.kind];
  if (opening) res.write(opening);
  while (!control.signal.aborted) {
    control.sentEndless(piece.length);
    if (endless.everyMs > 0) {
      res.write(piece);
      if (!(await pause(endless.everyMs, control.signal))) return;
    } else if (!res.write(piece)) {
      await once(res, 'drain', { signal: control.signal }).catch(() => {});
    }
  }
}

/** Answers a `stream: false` request with `body`, applying the faults that make sense without a stream. */
export async function writeJson(
  res: ServerResponse,
  body: object,
  faults: StreamFaults,
  control: WriteControl,
): Promise<void> {
  if (faults.silent) return;
  if (!(await pause(faults.delayMs, control.signal))) return;
  if (faults.disconnectAfter !== undefined) return control.dropConnection();
  if (faults.stallAfter !== undefined) return;
  if (faults.malformedAfter !== undefined)
    return sendJson(res, 200, '{"id":"chatcmpl-broken","choices":[');
  if (faults.bodyEnding) return endBody(res, JSON.stringify(body), faults.bodyEnding);
  sendJson(res, 200, body);
}

/** The answer text a chunk carries ('' for role, tool-call, finish and usage chunks). */
function contentOf(payload: string): string {
  const chunk = JSON.parse(payload) as { choices?: { delta?: { content?: unknown } }[] };
  const content = chunk.choices?.[0]?.delta?.content;
  return typeof content === 'string' ? content : '';
}

/** False when the response was closed during the pause. */
async function pause(ms: number | undefined, signal: AbortSignal): Promise<boolean> {
  if (ms !== undefined && ms > 0) {
    try {
      await sleep(ms, undefined, { signal });
    } catch {
      return false;
    }
  }
  return !signal.aborted;
}

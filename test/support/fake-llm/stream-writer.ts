import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { sendJson } from '../fake-http.ts';
import type { StreamFaults } from './reply.ts';

/** How a writer tells the server it dropped the socket on purpose (not the client). */
export interface WriteControl {
  /** Aborted once the response is closed, so delays stop early. */
  signal: AbortSignal;
  dropConnection(): void;
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

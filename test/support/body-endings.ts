import type { ServerResponse } from 'node:http';

/**
 * The ways an upstream's 200 answer can end other than whole, on the real wire: the headers
 * promise the whole body (its `content-length`, as a real server sends it) and then
 * - `cut-after-headers`, `cut-mid-body`, `cut-last-byte`: the connection closes after none, half,
 *   or all but one of its bytes;
 * - `truncated-json`: a complete answer whose JSON stops half way (its length says so);
 * - `stall-mid-body`: half of it, then nothing until the client gives up;
 * - `html-502`: a proxy's HTML error page instead of the service's answer.
 */
export const BODY_ENDINGS = [
  'cut-after-headers',
  'cut-mid-body',
  'cut-last-byte',
  'truncated-json',
  'stall-mid-body',
  'html-502',
] as const;
/**
 * `oversized` (not in BODY_ENDINGS: an ending of its own, tested where an answer is bounded):
 * a valid answer preceded by OVERSIZED_BYTES of JSON whitespace, written as fast as the client
 * reads, chunked (no length to refuse it by). The fake stops writing when the client hangs up;
 * `oversizedAnswers` says how far each got.
 */
export type BodyEnding = (typeof BODY_ENDINGS)[number] | 'oversized';

/** Larger than any bound Parley puts on an upstream's answer. */
export const OVERSIZED_BYTES = 96 * 1024 * 1024;

export interface OversizedAnswer {
  /** Bytes written before the client hung up, or all of them. */
  written: number;
  total: number;
  /** Whether the client closed the connection before all was written. */
  closedEarly: boolean;
  /** Resolves when the answer was written whole or the client hung up. */
  done: Promise<void>;
}

/** Every `oversized` answer any fake sent, in order. */
export const oversizedAnswers: OversizedAnswer[] = [];

function writeOversized(res: ServerResponse, body: Buffer, contentType: string): void {
  const total = OVERSIZED_BYTES + body.length;
  let finish: () => void = () => {};
  const answer: OversizedAnswer = {
    written: 0,
    total,
    closedEarly: false,
    done: new Promise((resolve) => {
      finish = resolve;
    }),
  };
  oversizedAnswers.push(answer);
  res.writeHead(200, { 'content-type': contentType });
  const piece = Buffer.alloc(256 * 1024, 0x20);
  res.on('close', () => {
    answer.closedEarly = !res.writableFinished;
    finish();
  });
  const more = () => {
    while (!res.destroyed) {
      const left = OVERSIZED_BYTES - answer.written;
      if (left <= 0) {
        answer.written += body.length;
        res.end(body);
        return;
      }
      const chunk = left >= piece.length ? piece : piece.subarray(0, left);
      answer.written += chunk.length;
      if (!res.write(chunk)) {
        res.once('drain', more);
        return;
      }
    }
  };
  more();
}

/** The page nginx answers when the service behind it is down. */
export const HTML_502 =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';

/**
 * Answers `body` (the JSON, or the file, a good answer would carry) ended as `ending` says. A stalled answer
 * stays open until the client hangs up (or `res` is destroyed by the fake's close).
 */
export function endBody(
  res: ServerResponse,
  body: string | Buffer,
  ending: BodyEnding,
  contentType = 'application/json',
): void {
  if (ending === 'html-502') {
    res.writeHead(502, {
      'content-type': 'text/html',
      'content-length': Buffer.byteLength(HTML_502),
    });
    res.end(HTML_502);
    return;
  }
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  if (ending === 'oversized') {
    writeOversized(res, bytes, contentType);
    return;
  }
  if (ending === 'truncated-json') {
    const half = bytes.subarray(0, Math.floor(bytes.length / 2));
    res.writeHead(200, { 'content-type': contentType, 'content-length': half.length });
    res.end(half);
    return;
  }
  res.writeHead(200, { 'content-type': contentType, 'content-length': bytes.length });
  const sent =
    ending === 'cut-after-headers'
      ? 0
      : ending === 'cut-last-byte'
        ? bytes.length - 1
        : Math.floor(bytes.length / 2);
  // The headers go out first on their own, as a server sends them before its body is ready.
  res.flushHeaders();
  if (sent > 0) res.write(bytes.subarray(0, sent));
  if (ending === 'stall-mid-body') return;
  // Let the bytes leave before the connection goes.
  setTimeout(() => res.socket?.destroy(), 20);
}

import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { errorBodyForUrl } from '../openai/openai-error.ts';

const ANSWERS: Record<string, { status: number; detail: string; code: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    detail: 'The request did not arrive in time (REQUEST_TIMEOUT_MS); send it again.',
    code: 'request_timeout',
  },
  HPE_HEADER_OVERFLOW: {
    status: 431,
    detail: 'The request headers are too large.',
    code: 'headers_too_large',
  },
};
const MALFORMED = { status: 400, detail: 'The request is not valid HTTP.', code: 'invalid_http' };

/**
 * Answers what Node's HTTP parser rejects before any route sees it (a request not received
 * within REQUEST_TIMEOUT_MS, oversized headers, malformed HTTP) like every other error, with
 * a `{"detail": …}` body (OpenAI's `{"error": …}` under `/v1/`, as that door's clients read
 * it), and closes the connection, as Node itself does. Nothing is written when an answer has
 * already started on the socket: a second one would corrupt it.
 */
export function clientErrorHandler(logger: FastifyBaseLogger) {
  return (error: NodeJS.ErrnoException, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const { status, detail, code } = (error.code && ANSWERS[error.code]) || MALFORMED;
    logger.info({ code: error.code, status }, 'request rejected before routing');
    // The same check Node makes (its `_httpMessage` is the response in flight, if any).
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) {
      // A request of the OpenAI-compatible door gets OpenAI's shape: its URL is the parsed
      // request's when its head has arrived, else the request line in the bytes refused
      // (headers too large: the head never arrived whole).
      const url = inFlight?.req?.url ?? requestTarget(error);
      const body = JSON.stringify(errorBodyForUrl(url, status, detail, code));
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(error);
  };
}

/** The request line's target in the bytes Node's parser refused, when they begin with it. */
function requestTarget(error: NodeJS.ErrnoException): string | undefined {
  const packet = (error as { rawPacket?: unknown }).rawPacket;
  if (!Buffer.isBuffer(packet)) return undefined;
  return /^[A-Z]{3,7} (\S+)/.exec(packet.subarray(0, 1024).toString('latin1'))?.[1];
}

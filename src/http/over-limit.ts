import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * How much of a body past its limit is read and dropped after the 413, rather than closing
 * the connection. Closing at once resets the connection under a client still sending, and the
 * reset can discard the 413 before the client reads it (it sees "EPIPE" or "connection reset"
 * instead of the reason). Beyond this the connection is closed: reading on would let any
 * client keep the server busy with a body it will never use.
 */
const DRAIN_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Settles what happens to the rest of a body over `limitBytes` once its 413 is decided: a
 * little over, it is read and dropped and the connection kept (Node reads a request's body
 * off the socket only while someone consumes it); far over, or of unknown length (chunked),
 * the connection closes after the 413, unread.
 */
export function afterBodyOverLimit(
  request: FastifyRequest,
  reply: FastifyReply,
  limitBytes: number,
): void {
  // A chunked body has no length: NaN compares false.
  const declared = Number(request.headers['content-length']);
  if (declared - limitBytes <= DRAIN_MAX_BYTES) {
    // Fastify marks any body it did not parse `connection: close`.
    reply.removeHeader('connection');
    request.raw.resume();
  } else {
    reply.header('connection', 'close');
  }
}

import type { FastifyRequest } from 'fastify';

/**
 * How much of a body past its limit is read and dropped after the 413, rather than closing
 * the connection. Closing at once resets the connection under a client still sending, and the
 * reset can discard the 413 before the client reads it (it sees "EPIPE" or "connection reset"
 * instead of the reason). Beyond this the connection is closed: reading on would let any
 * client keep the server busy with a body it will never use.
 */
export const DRAIN_MAX_BYTES = 16 * 1024 * 1024;

/** Whether the rest of a request over `limitBytes` is small enough to read to its end. */
export function readsRestOf(request: FastifyRequest, limitBytes: number): boolean {
  // A chunked body (no length) has no known end: NaN compares false, so it is closed on.
  const declared = Number(request.headers['content-length']);
  return declared - limitBytes <= DRAIN_MAX_BYTES;
}

import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { waitFor } from './wait-for.ts';

export interface RawReplies {
  /** Everything the server sent. */
  text: string;
  /** The server closed the connection (after its answers), by ending or resetting it. */
  closedByServer: boolean;
  /** A write or read failed (EPIPE, ECONNRESET): the client may have lost answers. */
  error?: string;
}

export interface RawRequest {
  /** Request line and headers, ending with the blank line. */
  head: string;
  body?: Buffer;
}

/**
 * Writes each request (head, then its body in 64 KB pieces) on one keep-alive socket without
 * reading in between, as a simple client does, then collects whatever the server answered:
 * one answer per request, or fewer if the server closed or reset the connection first (with
 * `untilClosed`, until the server closes it).
 */
export async function sendOverRawSocket(
  url: string,
  requests: RawRequest[],
  /** Wait for the server to close the connection, not just for the answers. */
  { untilClosed = false }: { untilClosed?: boolean } = {},
): Promise<RawReplies> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const received: Buffer[] = [];
  let error: string | undefined;
  let closedByServer = false;
  socket.on('end', () => {
    closedByServer = true;
  });
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  socket.on('error', (cause: NodeJS.ErrnoException) => {
    error ??= cause.code ?? cause.message;
  });
  const answers = () =>
    (
      Buffer.concat(received)
        .toString()
        .match(/HTTP\/1\.1 \d{3} /g) ?? []
    ).length;
  try {
    await once(socket, 'connect');
    for (const { head, body } of requests) {
      await write(socket, Buffer.from(head));
      for (let at = 0; body && at < body.length; at += 64 * 1024) {
        await write(socket, body.subarray(at, at + 64 * 1024));
      }
    }
    await waitFor(
      () => closedByServer || socket.destroyed || (!untilClosed && answers() >= requests.length),
      10_000,
    );
  } catch (cause) {
    error ??= (cause as NodeJS.ErrnoException).code ?? String(cause);
  } finally {
    // Gone before we hang up: the server closed it, with a FIN ('end') or a reset.
    if (socket.destroyed) closedByServer = true;
    socket.destroy();
  }
  const text = Buffer.concat(received).toString();
  return error === undefined ? { text, closedByServer } : { text, closedByServer, error };
}

function write(socket: Socket, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.write(data, (cause) => (cause ? reject(cause) : resolve()));
  });
}

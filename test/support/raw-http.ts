import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { waitFor } from './wait-for.ts';

export interface RawReplies {
  /** Everything the server sent. */
  text: string;
  /** The server ended the connection (after its answers). */
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
 * one answer per request, or fewer if the server closed or reset the connection first.
 */
export async function sendOverRawSocket(url: string, requests: RawRequest[]): Promise<RawReplies> {
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
    await waitFor(() => answers() >= requests.length || socket.destroyed, 10_000);
  } catch (cause) {
    error ??= (cause as NodeJS.ErrnoException).code ?? String(cause);
  } finally {
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

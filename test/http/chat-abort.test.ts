import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { SHUTDOWN } from '../../src/assistant/chat-events.ts';
import { abortWithExchange } from '../../src/http/chat-abort.ts';

/**
 * A chat's signal must say whether its client is still there, however long the route took to
 * start the chat: a client that left while the route awaited (the limits, an image being
 * saved) must not have its chat run for nobody, holding the user's turn. Real exchanges over
 * a real socket.
 */
describe('a chat tied to its HTTP exchange', () => {
  /** Serves one request: `route` gets the response once the body is read. */
  async function exchange(
    route: (response: http.ServerResponse) => Promise<AbortSignal>,
    client: (request: http.ClientRequest) => void,
  ): Promise<AbortSignal> {
    let signal!: Promise<AbortSignal>;
    const server = http.createServer((request, response) => {
      request.resume();
      signal = once(request, 'end').then(() => route(response));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const request = http.request({
      port: (server.address() as AddressInfo).port,
      host: '127.0.0.1',
      method: 'POST',
    });
    request.on('error', () => {});
    request.end('{}');
    client(request);
    while (!signal) await new Promise((resolve) => setTimeout(resolve, 5));
    try {
      return await signal;
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }
  const never = new AbortController().signal;

  it('is aborted when the client left before the chat was tied to it', async () => {
    const signal = await exchange(
      async (response) => {
        await once(response, 'close'); // the route was still awaiting when the client left
        return abortWithExchange(response, never).signal;
      },
      (request) => setTimeout(() => request.destroy(), 50),
    );
    expect(signal.aborted).toBe(true);
  });

  it('is aborted when the client leaves during the chat', async () => {
    const signal = await exchange(
      async (response) => {
        const { signal } = abortWithExchange(response, never);
        expect(signal.aborted).toBe(false);
        await once(signal, 'abort');
        return signal;
      },
      (request) => setTimeout(() => request.destroy(), 50),
    );
    expect(signal.aborted).toBe(true);
  });

  it('is aborted with the shutdown reason when the server began stopping before', async () => {
    const stopping = new AbortController();
    stopping.abort();
    const signal = await exchange(
      async (response) => {
        const { signal } = abortWithExchange(response, stopping.signal);
        response.end();
        return signal;
      },
      (request) => request.on('response', (answer) => answer.resume()),
    );
    expect(signal.reason).toBe(SHUTDOWN);
  });

  it('is not aborted once the answer was sent in full', async () => {
    const signal = await exchange(
      async (response) => {
        const { signal } = abortWithExchange(response, never);
        response.end('done');
        await once(response, 'close');
        return signal;
      },
      (request) => request.on('response', (answer) => answer.resume()),
    );
    expect(signal.aborted).toBe(false);
  });
});

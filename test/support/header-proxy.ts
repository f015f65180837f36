import { createServer, request as forward } from 'node:http';

export interface HeaderProxy {
  url: string;
  /**
   * Where requests go from now on, and the headers set on each (a proxy can start before the
   * server it fronts, whose keys exist only once it runs).
   */
  forwardTo(target: string, headers: Record<string, string>): void;
  close(): Promise<void>;
}

/**
 * An HTTP proxy on loopback that forwards every request unchanged (its Host and Origin
 * included) except for the headers it is told to set. For clients that cannot send a
 * credential (the MCP conformance runner sends no Authorization header): the proxy adds the
 * user's key, as a reverse proxy in front of Parley could, and Parley's own code is untouched.
 */
export async function startHeaderProxy(): Promise<HeaderProxy> {
  let upstream: { url: URL; headers: Record<string, string> } | undefined;
  const server = createServer((incoming, outgoing) => {
    if (!upstream) {
      outgoing.writeHead(502).end('the proxy was told no target');
      return;
    }
    const proxied = forward(
      {
        host: upstream.url.hostname,
        port: upstream.url.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, ...upstream.headers },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    proxied.on('error', () => outgoing.destroy());
    incoming.pipe(proxied);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    forwardTo: (target, headers) => {
      upstream = { url: new URL(target), headers };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

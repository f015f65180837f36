import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of the PostgreSQL server, so a test can make the database "go away"
 * (cut every connection and refuse new ones) and come back, without touching the real server
 * that other tests share.
 */
export interface TcpProxy {
  port: number;
  cut(): Promise<void>;
  /**
   * The connections open now go silent for good, neither answered nor closed (what a
   * failover or a network partition leaves a client with); new ones reach the server.
   */
  silence(): void;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const silent = new WeakSet<Socket>();
  let port = 0;

  const open = async (): Promise<Server> => {
    // Half-open allowed: an end is passed on by hand, so a silent connection passes on none
    // (a client that closes it waits, as it would for a server it can no longer reach).
    const server = createServer({ allowHalfOpen: true }, (client) => {
      const upstream = connect({ port: targetPort, host: targetHost, allowHalfOpen: true });
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.on('data', (data) => silent.has(client) || upstream.write(data));
      upstream.on('data', (data) => silent.has(client) || client.write(data));
      client.on('end', () => silent.has(client) || upstream.end());
      upstream.on('end', () => silent.has(client) || client.end());
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
    return server;
  };

  let server: Server | undefined = await open();
  const shut = async () => {
    const current = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (current) await new Promise<void>((resolve) => current.close(() => resolve()));
  };

  return {
    get port() {
      return port;
    },
    cut: shut,
    silence() {
      for (const socket of sockets) silent.add(socket);
    },
    async restore() {
      server ??= await open();
    },
    close: shut,
  };
}

import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of the PostgreSQL server, so a test can make the database "go away"
 * (cut every connection and refuse new ones) and come back, without touching the real server
 * that other tests share.
 */
export interface TcpProxy {
  port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let port = 0;

  const open = async (): Promise<Server> => {
    const server = createServer((client) => {
      const upstream = connect(targetPort, targetHost);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
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
    async restore() {
      server ??= await open();
    },
    close: shut,
  };
}

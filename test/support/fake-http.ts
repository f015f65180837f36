import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as a fake received it. `body` is the parsed JSON, or undefined when not JSON. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
  body: unknown;
}

/** A request the fake did not expect; tests assert there are none. */
export interface UnexpectedRequest {
  method: string;
  path: string;
  reason: string;
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export interface Listening {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  origin: string;
  /** Drops open connections (a stalled stream would otherwise keep close() waiting forever). */
  close(): Promise<void>;
}

/**
 * Serves `handler` on an ephemeral loopback port. A handler that throws is a bug in
 * the fake or the test, so it answers 500 and reports through `onCrash` instead of
 * vanishing into an unhandled rejection.
 */
export async function listen(
  handler: Handler,
  onCrash: (req: IncomingMessage, error: unknown) => void,
): Promise<Listening> {
  const server = createServer((req, res) => {
    handler(req, res).catch((error: unknown) => {
      onCrash(req, error);
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(error) } });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

export async function readRequest(req: IncomingMessage): Promise<RecordedRequest> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  const rawBody = Buffer.concat(parts);
  const url = new URL(req.url ?? '/', 'http://fake');
  return {
    method: req.method ?? 'GET',
    path: url.pathname,
    query: url.searchParams,
    headers: req.headers,
    rawBody,
    body: parseJson(rawBody, req.headers['content-type']),
  };
}

function parseJson(raw: Buffer, contentType: string | undefined): unknown {
  if (raw.length === 0 || !contentType?.includes('json')) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Throws one error listing every unexpected request, so the failure says what went wrong. */
export function assertNone(fake: string, unexpected: readonly UnexpectedRequest[]): void {
  if (unexpected.length === 0) return;
  const lines = unexpected.map((u) => `  ${u.method} ${u.path}: ${u.reason}`);
  throw new Error(
    `${fake} received ${unexpected.length} unexpected request(s):\n${lines.join('\n')}`,
  );
}

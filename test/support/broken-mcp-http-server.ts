import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  assertNone,
  listen,
  type RecordedRequest,
  readRequest,
  sendJson,
  type UnexpectedRequest,
} from './fake-http.ts';

/**
 * An MCP server over Streamable HTTP written on raw `node:http`, speaking the wire protocol
 * itself (JSON-RPC 2.0 over POST: `initialize`, `notifications/initialized`, `tools/list`,
 * `tools/call`; answers as `application/json` or `text/event-stream`) so that it can end a
 * call badly: each tool is one way of ending. Sessions are real: `initialize` hands out an
 * `Mcp-Session-Id`, a request with an unknown one is answered 404 (the spec's "session
 * expired"). Anything it does not expect is recorded and answered 400; tests assert none.
 */
export const ENDINGS = {
  ok: 'Answers at once',
  sse_cut: 'SSE headers, half a result, then the socket is destroyed',
  sse_end: 'SSE headers, half a result, then the stream ends cleanly',
  sse_empty: 'SSE headers, then the stream ends with no event',
  json_cut: 'JSON headers with a length, half the body, then the socket is destroyed',
  cut_before: 'The socket is destroyed before any byte',
  http_500: 'HTTP 500',
  http_502: 'HTTP 502 with an HTML page',
  http_503: 'HTTP 503',
  html: 'HTTP 200 with an HTML page',
  not_jsonrpc: 'HTTP 200 application/json that is not JSON-RPC',
  not_json: 'HTTP 200 application/json that is not JSON',
  rpc_error: 'A JSON-RPC error object',
  trickle: 'SSE, the result in pieces, done well within the timeout',
  trickle_slow: 'SSE, the result in pieces, done past the timeout',
} as const;
export type Ending = keyof typeof ENDINGS;

export interface BrokenMcpHttpServer {
  url: string;
  requests: RecordedRequest[];
  unexpected: UnexpectedRequest[];
  /** Sessions handed out, in order. */
  sessions: string[];
  /** `tools/call`s received: tool name and the session they came on. */
  calls: { name: string; session: string | undefined }[];
  /** Forgets every session: the next request on one is answered 404. */
  forgetSessions(): void;
  /** The pause between pieces of a trickled answer. */
  pieceMs: number;
  assertNoUnexpected(): void;
  close(): Promise<void>;
}

const SECRET_BODY = 'upstream-body-text-not-for-logs';

export async function startBrokenMcpHttpServer(): Promise<BrokenMcpHttpServer> {
  const requests: RecordedRequest[] = [];
  const unexpected: UnexpectedRequest[] = [];
  const sessions: string[] = [];
  const live = new Set<string>();
  const calls: BrokenMcpHttpServer['calls'] = [];
  const timers = new Set<NodeJS.Timeout>();
  const state = { pieceMs: 300 };

  const refuse = (res: ServerResponse, request: RecordedRequest, reason: string) => {
    unexpected.push({ method: request.method, path: request.path, reason });
    sendJson(res, 400, { error: reason });
  };
  const later = (ms: number, work: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      work();
    }, ms);
    timers.add(timer);
  };
  const sse = (res: ServerResponse) =>
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = await readRequest(req);
    requests.push(request);
    if (request.path !== '/mcp') return refuse(res, request, 'no such path');
    const session = request.headers['mcp-session-id'] as string | undefined;
    // No standalone SSE stream (allowed by the spec); a session may be ended.
    if (request.method === 'GET') return void res.writeHead(405).end();
    if (request.method === 'DELETE') {
      if (session) live.delete(session);
      return void res.writeHead(200).end();
    }
    if (request.method !== 'POST') return refuse(res, request, 'method');
    const accept = String(request.headers.accept ?? '');
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
      return refuse(res, request, `accept header ${accept}`);
    }
    const message = request.body as
      | {
          jsonrpc?: string;
          id?: number | string;
          method?: string;
          params?: { name?: string; protocolVersion?: string };
        }
      | undefined;
    if (message?.jsonrpc !== '2.0' || typeof message.method !== 'string') {
      return refuse(res, request, 'not a JSON-RPC message');
    }
    if (message.method === 'initialize') {
      if (session) return refuse(res, request, 'initialize with a session id');
      const id = randomUUID();
      sessions.push(id);
      live.add(id);
      return sendJson(
        res,
        200,
        {
          jsonrpc: '2.0',
          id: message.id,
          result: {
            protocolVersion: message.params?.protocolVersion ?? '2025-06-18',
            capabilities: { tools: {} },
            serverInfo: { name: 'broken', version: '1.0.0' },
          },
        },
        { 'mcp-session-id': id },
      );
    }
    if (!session) return refuse(res, request, `${message.method} without a session`);
    if (!live.has(session)) {
      // The spec's way of saying the session is over.
      return sendJson(res, 404, {
        jsonrpc: '2.0',
        id: null,
        error: { code: -32001, message: 'Session not found' },
      });
    }
    if (message.id === undefined) {
      if (message.method.startsWith('notifications/')) return void res.writeHead(202).end();
      return refuse(res, request, `notification ${message.method}`);
    }
    if (message.method === 'tools/list') {
      return sendJson(res, 200, {
        jsonrpc: '2.0',
        id: message.id,
        result: {
          tools: Object.entries(ENDINGS).map(([name, description]) => ({
            name,
            description,
            inputSchema: { type: 'object', properties: {} },
            annotations: { readOnlyHint: true },
          })),
        },
      });
    }
    if (message.method !== 'tools/call') return refuse(res, request, `method ${message.method}`);
    const name = message.params?.name ?? '';
    calls.push({ name, session });
    const result = (text: string) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: message.id,
        result: { content: [{ type: 'text', text }] },
      });
    const whole = result(`the whole answer of ${name}`);
    const half = whole.slice(0, Math.floor(whole.length / 2));
    switch (name as Ending) {
      case 'ok':
        return sendJson(res, 200, whole);
      case 'sse_cut':
        sse(res);
        res.write(`event: message\ndata: ${half}`);
        return later(100, () => res.socket?.destroy());
      case 'sse_end':
        sse(res);
        res.write(`event: message\ndata: ${half}`);
        return later(100, () => res.end());
      case 'sse_empty':
        sse(res);
        return later(100, () => res.end());
      case 'json_cut':
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(whole),
        });
        res.write(half);
        return later(100, () => res.socket?.destroy());
      case 'cut_before':
        return void req.socket.destroy();
      case 'http_500':
        return sendJson(res, 500, { error: SECRET_BODY });
      case 'http_502':
        res.writeHead(502, { 'content-type': 'text/html' });
        return void res.end(`<html><body><h1>502 Bad Gateway</h1>${SECRET_BODY}</body></html>`);
      case 'http_503':
        res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '1' });
        return void res.end(`Service Unavailable ${SECRET_BODY}`);
      case 'html':
        res.writeHead(200, { 'content-type': 'text/html' });
        return void res.end(`<html><body>Sign in ${SECRET_BODY}</body></html>`);
      case 'not_jsonrpc':
        return sendJson(res, 200, { status: 'ok', detail: SECRET_BODY });
      case 'not_json':
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(`{"jsonrpc":"2.0","id":${message.id},"result":{"content":[{"type"`);
      case 'rpc_error':
        return sendJson(res, 200, {
          jsonrpc: '2.0',
          id: message.id,
          error: { code: -32603, message: `internal failure ${SECRET_BODY}` },
        });
      case 'trickle':
      case 'trickle_slow': {
        sse(res);
        const event = `event: message\ndata: ${whole}\n\n`;
        const pieces = name === 'trickle' ? 3 : 8;
        const size = Math.ceil(event.length / pieces);
        let at = 0;
        const next = () => {
          if (res.destroyed) return;
          res.write(event.slice(at, at + size));
          at += size;
          if (at >= event.length) return void res.end();
          later(state.pieceMs, next);
        };
        return next();
      }
      default:
        return refuse(res, request, `tool ${name}`);
    }
  }

  const server = await listen(handle, (req, error) => {
    unexpected.push({
      method: req.method ?? '?',
      path: req.url ?? '?',
      reason: `fake crashed: ${error}`,
    });
  });
  return {
    url: `${server.origin}/mcp`,
    requests,
    unexpected,
    sessions,
    calls,
    get pieceMs() {
      return state.pieceMs;
    },
    set pieceMs(ms: number) {
      state.pieceMs = ms;
    },
    forgetSessions: () => live.clear(),
    assertNoUnexpected: () => assertNone('broken MCP server', unexpected),
    close: () => {
      for (const timer of timers) clearTimeout(timer);
      return server.close();
    },
  };
}

export { SECRET_BODY };

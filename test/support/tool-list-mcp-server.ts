import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListToolsRequestSchema, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';

/** One page of a listing: its tools, and the cursor of the next page (none: the last). */
export type ListingPage = { tools: Tool[]; nextCursor?: string };

export interface ToolListMcpServer {
  url: string;
  /** Answers `tools/list`, page by page (the cursor the client sent); a test may swap it. */
  listing: (cursor: string | undefined) => ListingPage;
  /** `tools/list` requests received. */
  listCalls: number;
  /** Sends `notifications/tools/list_changed` on every open session. */
  notifyChanged(): Promise<void>;
  close(): Promise<void>;
}

/** A tool named `name` taking one string, its description `padding` long. */
export function listedTool(name: string, padding = 0): Tool {
  return {
    name,
    inputSchema: {
      type: 'object',
      properties: { text: { type: 'string', description: 'x'.repeat(padding) || 'text' } },
    },
  };
}

/**
 * An MCP server over Streamable HTTP, with sessions, built on the SDK's low-level `Server` so
 * that a test decides what `tools/list` answers: how many tools, in how many pages, with a
 * cursor that never ends, or a JSON-RPC error. It announces `tools.listChanged` and can send
 * the notification on the sessions' standalone SSE streams.
 */
export async function startToolListMcpServer(
  listing: ToolListMcpServer['listing'],
): Promise<ToolListMcpServer> {
  const sessions = new Map<string, { server: Server; transport: StreamableHTTPServerTransport }>();
  const state: ToolListMcpServer = {
    url: '',
    listing,
    listCalls: 0,
    notifyChanged: async () => {
      for (const { server } of sessions.values()) await server.sendToolListChanged();
    },
    close: async () => {},
  };
  const open = () => {
    const server = new Server(
      { name: 'tool-list', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    server.setRequestHandler(ListToolsRequestSchema, async (request) => {
      state.listCalls += 1;
      return state.listing(request.params?.cursor);
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        sessions.set(id, { server, transport });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    return { server, transport };
  };
  const http = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const id = request.headers['mcp-session-id'];
    const known = typeof id === 'string' ? sessions.get(id) : undefined;
    if (known) return known.transport.handleRequest(request, response, body);
    if (id !== undefined || body?.method !== 'initialize') {
      response.writeHead(id === undefined ? 400 : 404).end();
      return;
    }
    const { server, transport } = open();
    await server.connect(transport);
    await transport.handleRequest(request, response, body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  state.close = async () => {
    for (const { server } of sessions.values()) await server.close();
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  };
  return state;
}

/** A listing that fails with a JSON-RPC error (an internal error of the server's). */
export function failingListing(): ListingPage {
  throw new McpError(-32603, 'listing failed');
}

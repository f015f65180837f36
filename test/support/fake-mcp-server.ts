import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/**
 * A small MCP server built on the SDK's own server (the real protocol): `whoami` (read-only)
 * answers with the Authorization header it was called with over HTTP, `hang` never answers,
 * `note` is its description from a file (FAKE_MCP_DESCRIPTION_FILE) so a test can change the
 * tool definitions between two processes. Over HTTP it records every request's headers.
 */
function buildServer(headers: () => IncomingHttpHeaders | undefined): McpServer {
  const server = new McpServer({ name: 'fake-mcp', version: '1.0.0' });
  const file = process.env.FAKE_MCP_DESCRIPTION_FILE;
  server.registerTool(
    'whoami',
    {
      description: 'Says which credential the call came with',
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    async () => ({
      content: [{ type: 'text', text: `auth=${headers()?.authorization ?? 'none'}` }],
    }),
  );
  server.registerTool(
    'hang',
    { description: 'Never answers', inputSchema: {}, annotations: { readOnlyHint: true } },
    () => new Promise(() => {}),
  );
  server.registerTool(
    'note',
    {
      description: file ? readFileSync(file, 'utf8') : 'Keeps a note',
      inputSchema: { text: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ text }) => ({ content: [{ type: 'text', text: `noted ${text.length} chars` }] }),
  );
  return server;
}

export interface FakeMcpHttpServer {
  url: string;
  /** Every request's headers, in order. */
  requests: IncomingHttpHeaders[];
  close(): Promise<void>;
}

/** The fake over Streamable HTTP, stateless (a server per request), on a loopback port. */
export async function startFakeMcpHttpServer(): Promise<FakeMcpHttpServer> {
  const requests: IncomingHttpHeaders[] = [];
  const http = createServer(async (request, response) => {
    requests.push(request.headers);
    // A revoked token: refused, with the credential echoed back (a careless server does).
    if (request.headers.authorization?.endsWith('-revoked')) {
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: `bad token ${request.headers.authorization}` }));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const server = buildServer(() => request.headers);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request, response, body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    close: () =>
      new Promise((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

// Run as a program: the fake over stdio (its pid written where FAKE_MCP_PID_FILE says).
if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop() ?? '\0')) {
  if (process.env.FAKE_MCP_PID_FILE)
    writeFileSync(process.env.FAKE_MCP_PID_FILE, String(process.pid));
  // FAKE_MCP_LINGER: outlives the end of its stdin, as a server holding other work does.
  if (process.env.FAKE_MCP_LINGER) setInterval(() => {}, 60_000);
  await buildServer(() => undefined).connect(new StdioServerTransport());
}

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
 * tool definitions between two processes, and with FAKE_MCP_BIG_BYTES `big` answers that many
 * characters. Over HTTP it records every request's headers.
 */
function buildServer(
  headers: () => IncomingHttpHeaders | undefined,
  options: FakeMcpOptions = {},
): McpServer {
  const server = new McpServer({ name: 'fake-mcp', version: '1.0.0' });
  if (options.echoTools) registerEchoTools(server);
  if (options.crashTool) {
    server.registerTool(
      'crash',
      {
        description: 'Dies mid-call',
        inputSchema: { text: z.string() },
        annotations: { readOnlyHint: true },
      },
      async ({ text }) => {
        process.stdout.write(`garbage instead of an answer: ${text}\n`);
        process.stderr.write(`dying on ${text}\n`);
        process.exit(3);
      },
    );
  }
  const bigBytes = options.bigBytes ?? Number(process.env.FAKE_MCP_BIG_BYTES ?? 0);
  if (bigBytes > 0) {
    // A result of FAKE_MCP_BIG_BYTES characters (a file read whole, a database dump).
    server.registerTool(
      'big',
      { description: 'Answers at length', inputSchema: {}, annotations: { readOnlyHint: true } },
      async () => ({ content: [{ type: 'text', text: 'x'.repeat(bigBytes) }] }),
    );
  }
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

export interface FakeMcpOptions {
  /**
   * Adds `echo` (answers with its `text`) and `fail` (throws an error quoting its `text`, which
   * the SDK hands back as an error result): a server repeating what it was sent, either way.
   */
  echoTools?: boolean;
  /**
   * Adds `crash` (stdio only: it ends the process): prints its `text` as a line that is not
   * JSON-RPC on stdout and on stderr, then exits mid-call.
   */
  crashTool?: boolean;
  /** Adds `big`, answering this many characters (FAKE_MCP_BIG_BYTES over stdio). */
  bigBytes?: number;
  /** Over HTTP: answers as one JSON body instead of an SSE stream. */
  jsonResponse?: boolean;
}

function registerEchoTools(server: McpServer): void {
  const annotations = { readOnlyHint: true };
  const inputSchema = { text: z.string() };
  server.registerTool(
    'echo',
    { description: 'Repeats its text', inputSchema, annotations },
    async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }),
  );
  server.registerTool(
    'fail',
    { description: 'Fails, quoting its text', inputSchema, annotations },
    async ({ text }) => {
      throw new Error(`could not handle ${text}`);
    },
  );
}

export interface FakeMcpHttpServer {
  url: string;
  /** Every request's headers, in order. */
  requests: IncomingHttpHeaders[];
  /**
   * Authorization values answered 401 for now, as a server refuses a token it revoked (or
   * lost track of) on its own side; taken out, the same token is taken again.
   */
  refusing: Set<string>;
  close(): Promise<void>;
}

/** The fake over Streamable HTTP, stateless (a server per request), on a loopback port. */
export async function startFakeMcpHttpServer(
  options: FakeMcpOptions = {},
): Promise<FakeMcpHttpServer> {
  const requests: IncomingHttpHeaders[] = [];
  const refusing = new Set<string>();
  const http = createServer(async (request, response) => {
    requests.push(request.headers);
    // A revoked token: refused, with the credential echoed back (a careless server does).
    const authorization = request.headers.authorization;
    if (authorization?.endsWith('-revoked') || (authorization && refusing.has(authorization))) {
      response.writeHead(401, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: `bad token ${request.headers.authorization}` }));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const server = buildServer(() => request.headers, options);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: options.jsonResponse === true,
    });
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
    refusing,
    close: () =>
      new Promise((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

// Run as a program: the fake over stdio (its pid written where FAKE_MCP_PID_FILE says;
// FAKE_MCP_ECHO: with `echo`, `fail` and `crash`).
if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop() ?? '\0')) {
  if (process.env.FAKE_MCP_PID_FILE)
    writeFileSync(process.env.FAKE_MCP_PID_FILE, String(process.pid));
  // FAKE_MCP_LINGER: outlives the end of its stdin, as a server holding other work does.
  if (process.env.FAKE_MCP_LINGER) setInterval(() => {}, 60_000);
  const echo = Boolean(process.env.FAKE_MCP_ECHO);
  await buildServer(() => undefined, { echoTools: echo, crashTool: echo }).connect(
    new StdioServerTransport(),
  );
}

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { actingUser } from '../../accounts/principal.ts';
import { AppError } from '../../errors.ts';
import { answerInvalidParams } from '../../mcp/invalid-params.ts';
import {
  registerUserTools,
  type UserToolServices,
  type UserToolSettings,
} from '../../mcp/user-tools.ts';
import { APP_VERSION } from '../../version.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { userIdSchema } from '../schemas.ts';

export interface McpDoorSettings extends UserToolSettings {
  /** MCP_ALLOWED_ORIGINS: the only `Origin` values a request may carry. */
  allowedOrigins: readonly string[];
}

/** Fastify's failures to read the body as JSON. */
const PARSE_ERRORS = new Set(['FST_ERR_CTP_INVALID_JSON_BODY', 'FST_ERR_CTP_EMPTY_JSON_BODY']);

/** The request headers the MCP transport reads; the credential never reaches it. */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id'];

const INSTRUCTIONS =
  "Tools over one Parley user's own data: their documents, reminders, conversation memories " +
  'and knowledge graph. Every call acts for the user whose key authenticated it.';

/**
 * Parley as an MCP server (issue 33): `POST /mcp`, Streamable HTTP, each user's own tools
 * (src/mcp/user-tools.ts) for their own MCP clients.
 *
 * Who: the same bearer credentials and the one authorization rule as every route (a key acts
 * for its own user; the administrator's token for `?user_id=`, `default` without one; a key
 * naming another user is 403). Every request is authenticated on its own: nothing is trusted
 * because of an MCP session.
 *
 * Stateless (the SDK's `sessionIdGenerator: undefined`): each request gets a fresh server and
 * transport bound to its user, answered with JSON and then dropped. The tools are plain
 * request and answer over the database (no subscriptions, no server-initiated requests, no
 * progress), so a session would hold nothing worth keeping; without one, no session id is
 * issued that could be replayed by another key, expire, pile up, or be stranded on a replica:
 * any replica answers any request. `GET /mcp` (a stream for server-initiated messages) and
 * `DELETE /mcp` (ending a session) are 405, as the transport specification allows.
 *
 * Origin: a request carrying an `Origin` must come from MCP_ALLOWED_ORIGINS (403 otherwise):
 * the specification's defence against DNS rebinding. Clients that are not browsers send none.
 */
export function registerMcpRoute(
  app: App,
  services: UserToolServices,
  settings: McpDoorSettings,
): void {
  const allowed = new Set(settings.allowedOrigins);
  app.post(
    '/mcp',
    {
      onRequest: async (request) => {
        const origin = request.headers.origin;
        if (origin !== undefined && !allowed.has(origin)) {
          throw new AppError(
            'origin_not_allowed',
            403,
            `Requests from the origin ${JSON.stringify(origin.slice(0, 200))} are not accepted by /mcp (MCP_ALLOWED_ORIGINS).`,
          );
        }
      },
      // A body that is not JSON (or none) is JSON-RPC's parse error here, as the transport's
      // own 400 for a message that is no JSON-RPC: an MCP client reads it as an error
      // response, where a REST route's {"detail": …} 422 would be no message it knows.
      errorHandler: (error, request, reply) => {
        if (PARSE_ERRORS.has(error.code)) {
          return reply.code(400).send({
            jsonrpc: '2.0',
            error: { code: -32700, message: 'Parse error: the body is not a JSON message' },
            id: null,
          });
        }
        return app.errorHandler(error, request, reply);
      },
      schema: {
        summary: 'Parley as an MCP server (Streamable HTTP): the caller’s own tools',
        description:
          'A Model Context Protocol endpoint (protocol 2025-11-25 and earlier, stateless: no ' +
          '`Mcp-Session-Id`; answers are JSON). Tools: `search_documents`, `list_reminders`, ' +
          '`set_reminder`, `cancel_reminder`, `list_memories`, `delete_memory`, `query_graph`, ' +
          'all over the caller’s own data. Point an MCP client at this URL with the user’s key ' +
          'as `Authorization: Bearer pk_…`; with `API_TOKEN`, `user_id` names the user. A ' +
          'request with an `Origin` not in `MCP_ALLOWED_ORIGINS` is 403. See docs/mcp.md.',
        tags: ['mcp'],
        querystring: z.object({
          user_id: userIdSchema
            .optional()
            .describe(
              'The user the tools act for: with a key, its own (the default); with API_TOKEN, anyone (default `default`)',
            ),
        }),
        body: z.unknown().describe('A JSON-RPC 2.0 message of MCP, or a batch of them'),
        response: {
          200: z.unknown().describe('The JSON-RPC response(s)'),
          202: z.null().describe('A notification or response was accepted'),
          400: z
            .unknown()
            .describe(
              'Not JSON (-32700, parse error) or not a JSON-RPC message of MCP: a JSON-RPC error',
            ),
          406: z.unknown().describe('`Accept` must list application/json and text/event-stream'),
          ...errorResponses(...PER_USER, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const userId = actingUser(request.principal, request.query.user_id);
      const server = new McpServer(
        { name: 'parley', version: APP_VERSION },
        { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
      );
      registerUserTools(server, userId, services, settings, request.log);
      // The SDK says `listChanged: true` once a tool is registered, but a stateless door has no
      // stream to send `notifications/tools/list_changed` on: a client must not wait for one.
      server.server.registerCapabilities({ tools: { listChanged: false } });
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      try {
        await server.connect(transport);
        answerInvalidParams(transport);
        const answer = await Promise.race([
          transport.handleRequest(webRequest(request), { parsedBody: request.body }),
          clientLeft(reply),
        ]);
        // Gone: closing the server below aborts the calls under way; nobody reads an answer.
        if (answer === undefined) return reply.hijack();
        reply.code(answer.status as 200);
        answer.headers.forEach((value, name) => {
          reply.header(name, value);
        });
        const body = await answer.text();
        return body === '' ? reply.send() : reply.send(body);
      } finally {
        await server.close();
      }
    },
  );
}

/** The request as the SDK's web-standard transport takes it (the body is already parsed). */
function webRequest(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const name of TRANSPORT_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers.set(name, value);
  }
  return new Request(new URL(request.url, 'http://parley.invalid'), { method: 'POST', headers });
}

/** Resolves (with nothing) when the client closes the connection before its answer. */
function clientLeft(reply: FastifyReply): Promise<undefined> {
  return new Promise((resolve) => {
    const left = () => {
      if (!reply.raw.writableFinished) resolve(undefined);
    };
    if (reply.raw.destroyed) left();
    else reply.raw.once('close', left);
  });
}

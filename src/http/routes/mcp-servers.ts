import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { requireAdmin } from '../../accounts/principal.ts';
import { AppError, notFound } from '../../errors.ts';
import type { CredentialCipher } from '../../mcp/credential-cipher.ts';
import { MAX_TOOL_PAGES, type McpConnections } from '../../mcp/mcp-connections.ts';
import type { ToolLimits } from '../../mcp/tool-selection.ts';
import { type ToolStatus, toolStatus } from '../../mcp/tool-status.ts';
import type { McpRepository, McpServerRecord } from '../../storage/mcp-repository.ts';
import { visibleText } from '../../visible-text.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { userIdSchema, uuidSchema, withoutNul } from '../schemas.ts';

export interface McpRouteDependencies {
  repository: McpRepository;
  connections: McpConnections;
  /** Absent without MCP_CREDENTIALS_KEY: users cannot store credentials then. */
  cipher: CredentialCipher | undefined;
  /** MCP_MAX_TOOLS and MCP_TOOL_SCHEMA_MAX_CHARS, to say which tools a user's chats get. */
  toolLimits: ToolLimits;
}

const ADMIN_ERRORS = [401, 403, 503] as const;
/**
 * Headers a user's credential may not be sent in: HTTP's own (a wrong Content-Length makes
 * every request fail before it is sent) and the ones the MCP transport sets on each request
 * (overriding them breaks the session or the content negotiation).
 */
const TRANSPORT_HEADERS = new Set([
  'accept',
  'connection',
  'content-encoding',
  'content-length',
  'content-type',
  'host',
  'keep-alive',
  'last-event-id',
  'mcp-protocol-version',
  'mcp-session-id',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
const tags = ['mcp'];
const serverName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,29}$/, {
    message: 'must be 1-30 of a-z, 0-9 and -, starting with a letter or digit',
  })
  .describe('Names the server; its tools reach the model as `<name>__<tool>`');
// Stored as PostgreSQL text or JSON, which cannot hold U+0000.
const toolNames = z.array(visibleText(withoutNul(z.string().min(1).max(128)))).max(200);
const limited = (max: number) => visibleText(withoutNul(z.string().min(1).max(max)));
const createBody = z.discriminatedUnion('transport', [
  z
    .object({
      transport: z.literal('stdio'),
      name: serverName,
      command: limited(1_000).describe('The program, found on PATH or as an absolute path'),
      args: z
        .array(withoutNul(z.string().max(4_000)))
        .max(100)
        .default([]),
      env: z
        .record(
          z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/),
          withoutNul(z.string().max(8_000)),
        )
        .default({})
        .refine((env) => Object.keys(env).length <= 50, { message: 'at most 50 variables' })
        .describe('The only variables it gets besides HOME, LOGNAME, PATH, SHELL, TERM, USER'),
      shared_process: z
        .boolean()
        .default(false)
        .describe(
          "One process for every user: only for a server that holds no user's state (default: a process per user)",
        ),
      trusted: z.boolean().default(false),
      approval_tools: toolNames.default([]),
      restricted: z.boolean().default(false),
    })
    .strict(),
  z
    .object({
      transport: z.literal('http'),
      name: serverName,
      url: withoutNul(z.string().max(2_000)).refine(
        (value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol),
        {
          message: 'must be an http:// or https:// URL',
        },
      ),
      trusted: z.boolean().default(false),
      approval_tools: toolNames.default([]),
      restricted: z.boolean().default(false),
    })
    .strict(),
]);
const changeBody = z
  .object({
    enabled: z.boolean().optional(),
    trusted: z
      .boolean()
      .optional()
      .describe(
        "Believe the server's read-only annotations (its read-only tools need no approval)",
      ),
    restricted: z.boolean().optional().describe('Only users allowed one by one may use it'),
    shared_process: z.boolean().optional(),
    approval_tools: toolNames.optional().describe('Tools that always need the user’s approval'),
  })
  .strict();
const serverView = z.object({
  id: z.uuid(),
  name: z.string(),
  transport: z.enum(['stdio', 'http']),
  command_line: z
    .array(z.string())
    .nullable()
    .describe('stdio: exactly what runs (the program, then each argument)'),
  env_names: z.array(z.string()).describe('The variables given to it (values are not shown)'),
  url: z.string().nullable(),
  enabled: z.boolean(),
  restricted: z.boolean(),
  trusted: z.boolean(),
  shared_process: z.boolean(),
  approval_tools: z.array(z.string()),
  status: z.object({
    state: z.enum(['disabled', 'held', 'down', 'up', 'unknown']),
    reason: z.string().nullable().describe('Why it is down or held'),
    stderr: z.string().nullable().describe("The server's last stderr lines (administrator only)"),
    since: z.string().nullable(),
    listing_cut: z
      .boolean()
      .describe(
        `Its latest tool listing had more than ${MAX_TOOL_PAGES} pages: the rest is not read`,
      ),
    listing_stale_since: z
      .string()
      .nullable()
      .describe(
        'Since when listing its changed tools (after tools/list_changed) fails: its older tools are offered meanwhile',
      ),
  }),
  tools: z.object({
    approved_fingerprint: z.string().nullable(),
    seen_fingerprint: z.string().nullable(),
    approved: z.array(z.unknown()).nullable(),
    seen: z.array(z.unknown()).nullable().describe('The definitions to approve when held'),
  }),
});
const serverParams = z.object({ server_id: uuidSchema('must be a server id') });

function view(server: McpServerRecord) {
  const held =
    server.approvedFingerprint !== null &&
    server.seenFingerprint !== null &&
    server.approvedFingerprint !== server.seenFingerprint;
  const state = !server.enabled
    ? 'disabled'
    : held
      ? 'held'
      : server.lastError
        ? 'down'
        : server.seenFingerprint
          ? 'up'
          : 'unknown';
  return {
    id: server.id,
    name: server.name,
    transport: server.transport,
    command_line: server.transport === 'stdio' ? [server.command ?? '', ...server.args] : null,
    env_names: Object.keys(server.env).sort(),
    url: server.url,
    enabled: server.enabled,
    restricted: server.restricted,
    trusted: server.trusted,
    shared_process: server.sharedProcess,
    approval_tools: server.approvalTools,
    status: {
      state,
      reason: held
        ? 'its tool definitions changed: approve them to offer its tools again'
        : (server.lastError ?? null),
      stderr: server.lastStderr ?? null,
      since: server.lastErrorAt?.toISOString() ?? null,
      listing_cut: server.listingCut,
      listing_stale_since: server.listingStaleSince?.toISOString() ?? null,
    },
    tools: {
      approved_fingerprint: server.approvedFingerprint,
      seen_fingerprint: server.seenFingerprint,
      approved: server.approvedTools ?? null,
      seen: server.seenTools ?? null,
    },
  } as const;
}

const userServerView = z.object({
  id: z.uuid(),
  name: z.string(),
  transport: z.enum(['stdio', 'http']),
  allowed: z.boolean().describe('The administrator lets this user use it'),
  enabled: z.boolean().describe('The user has it switched on'),
  held: z.boolean().describe('Its tools are not offered until the administrator approves a change'),
  has_credential: z.boolean().describe('The user stored a credential (never shown again)'),
  refused: z
    .object({
      reason: z
        .string()
        .describe('What the server answered, such as `the server answered HTTP 401`'),
      since: z.string().describe('The first refusal in a row'),
    })
    .nullable()
    .describe(
      'The server refused this user at their last connection (HTTP 401 or 403): their credential, or none, is not one it takes. None of its tools are offered to them until it takes them; storing a credential clears it until the next use',
    ),
  always_allowed: z.array(z.string()).describe('Tools this user allowed for good'),
  tools: z
    .object({
      listed: z
        .number()
        .int()
        .nullable()
        .describe('Tools in its latest listing (null: not listed yet)'),
      offered: z.number().int().describe("Of them, the ones this user's chats offer the model"),
      left_out: z
        .array(
          z.object({
            name: z.string(),
            reason: z
              .enum(['tool_limit', 'schema_too_large', 'name_not_accepted'])
              .describe(
                "tool_limit: past its server's share of MCP_MAX_TOOLS (dealt round-robin over the user's servers by name; its tools by name); schema_too_large: past MCP_TOOL_SCHEMA_MAX_CHARS; name_not_accepted: `<server>__<tool>` is not a name models take",
              ),
          }),
        )
        .describe('Listed tools not offered, and why'),
      listing_cut: z
        .boolean()
        .describe(`Its listing had more than ${MAX_TOOL_PAGES} pages: the rest is not read`),
      stale_since: z
        .string()
        .nullable()
        .describe(
          'Since when listing its changed tools fails (retried with back-off): the older ones are offered meanwhile',
        ),
    })
    .describe('What chats get of its tools (none while it is switched off, held or down)'),
});

function toolsView(status: ToolStatus | undefined) {
  return {
    listed: status?.listed ?? null,
    offered: status?.offered ?? 0,
    left_out: status?.leftOut ?? [],
    listing_cut: status?.listingCut ?? false,
    stale_since: status?.staleSince?.toISOString() ?? null,
  };
}

/**
 * MCP servers (issue 33): the administrator's routes to add and manage them, each user's
 * switch and own credential, and the decision on a tool call awaiting approval.
 */
export function registerMcpRoutes(app: App, deps: McpRouteDependencies): void {
  const { repository, connections, cipher, toolLimits } = deps;
  const found = async (id: string) => {
    const server = await repository.get(id);
    if (!server) throw notFound('No MCP server has this id.');
    return server;
  };

  app.post(
    '/admin/mcp-servers',
    {
      schema: {
        summary: 'Add an MCP server (disabled until enabled: check `command_line` first)',
        tags,
        body: createBody,
        response: {
          201: serverView,
          ...errorResponses(...ADMIN_ERRORS, 409, 413, 415, 422),
        },
      },
      preValidation: async (request) => requireAdmin(request.principal),
    },
    async (request, reply) => {
      const body = request.body;
      const created = await repository.create({
        id: randomUUID(),
        name: body.name,
        transport: body.transport,
        command: body.transport === 'stdio' ? body.command : null,
        args: body.transport === 'stdio' ? body.args : [],
        env: body.transport === 'stdio' ? body.env : {},
        url: body.transport === 'http' ? body.url : null,
        sharedProcess: body.transport === 'stdio' ? body.shared_process : false,
        trusted: body.trusted,
        approvalTools: body.approval_tools,
        restricted: body.restricted,
      });
      if (!created) {
        throw new AppError(
          'mcp_server_exists',
          409,
          `An MCP server is named ${body.name} already.`,
        );
      }
      return reply.code(201).send(view(created));
    },
  );

  app.get(
    '/admin/mcp-servers',
    {
      schema: {
        summary: 'List the MCP servers, their status and why one is down',
        tags,
        response: {
          200: z.object({ servers: z.array(serverView) }),
          ...errorResponses(...ADMIN_ERRORS),
        },
      },
      preValidation: async (request) => requireAdmin(request.principal),
    },
    async () => ({ servers: (await repository.list()).map(view) }),
  );

  app.get(
    '/admin/mcp-servers/:server_id',
    {
      schema: {
        summary: 'One MCP server: the exact command, its status, its tool definitions',
        tags,
        params: serverParams,
        response: { 200: serverView, ...errorResponses(...ADMIN_ERRORS, 404, 422) },
      },
      preValidation: async (request) => requireAdmin(request.principal),
    },
    async (request) => view(await found(request.params.server_id)),
  );

  app.patch(
    '/admin/mcp-servers/:server_id',
    {
      schema: {
        summary: 'Enable or disable an MCP server, trust it, restrict it, mark tools for approval',
        tags,
        params: serverParams,
        body: changeBody,
        response: { 200: serverView, ...errorResponses(...ADMIN_ERRORS, 404, 413, 415, 422) },
      },
      preValidation: async (request) => requireAdmin(request.principal),
    },
    async (request) => {
      const { enabled, trusted, restricted, shared_process, approval_tools } = request.body;
      const changed = await repository.change(request.params.server_id, {
        ...(enabled !== undefined && { enabled }),
        ...(trusted !== undefined && { trusted }),
        ...(restricted !== undefined && { restricted }),
        ...(shared_process !== undefined && { sharedProcess: shared_process }),
        ...(approval_tools !== undefined && { approvalTools: approval_tools }),
      });
      if (!changed) throw notFound('No MCP server has this id.');
      // This process's connections follow at once; another replica's at their next idle close.
      if (enabled === false || shared_process !== undefined) {
        await connections.closeServer(changed.id);
      }
      return view(changed);
    },
  );

  app.delete(
    '/admin/mcp-servers/:server_id',
    {
      schema: {
        summary: 'Remove an MCP server (its users’ settings and credentials with it)',
        tags,
        params: serverParams,
        response: {
          200: z.object({ deleted: z.uuid() }),
          ...errorResponses(...ADMIN_ERRORS, 404, 422),
        },
      },
      preValidation: async (request) => requireAdmin(request.principal),
    },
    async (request) => {
      if (!(await repository.delete(request.params.server_id))) {
        throw notFound('No MCP server has this id.');
      }
      await connections.closeServer(request.params.server_id);
      return { deleted: request.params.server_id };
    },
  );

  app.post(
    '/admin/mcp-servers/:server_id/approve-tools',
    {
      schema: {
        summary: "Approve a held server's changed tool definitions (by the fingerprint seen)",
        tags,
        params: serverParams,
        body: z.object({ fingerprint: z.string().regex(/^[0-9a-f]{64}$/) }).strict(),
        response: { 200: serverView, ...errorResponses(...ADMIN_ERRORS, 404, 409, 413, 415, 422) },
      },
      preValidation: async (request) => requireAdmin(request.principal),
    },
    async (request) => {
      await found(request.params.server_id);
      const approved = await repository.approveListing(
        request.params.server_id,
        request.body.fingerprint,
      );
      if (!approved) {
        throw new AppError(
          'fingerprint_changed',
          409,
          'The server’s tool definitions are not (or no longer) the ones with this fingerprint: read them again.',
        );
      }
      return view(await found(request.params.server_id));
    },
  );

  app.put(
    '/admin/mcp-servers/:server_id/users/:user_id',
    {
      schema: {
        summary: 'Allow or forbid one user an MCP server (null: the server’s default)',
        tags,
        params: serverParams.extend({ user_id: userIdSchema }),
        body: z.object({ allowed: z.boolean().nullable() }).strict(),
        response: {
          200: z.object({ server_id: z.uuid(), user_id: z.string(), allowed: z.boolean() }),
          ...errorResponses(...ADMIN_ERRORS, 404, 413, 415, 422),
        },
      },
      preValidation: async (request) => requireAdmin(request.principal),
    },
    async (request) => {
      const server = await found(request.params.server_id);
      await repository.setAllowed(server.id, request.params.user_id, request.body.allowed);
      return {
        server_id: server.id,
        user_id: request.params.user_id,
        allowed: request.body.allowed ?? !server.restricted,
      };
    },
  );

  const listForUser = async (userId: string) => {
    const entries = await repository.forUser(userId);
    const tools = toolStatus(entries, toolLimits);
    return Promise.all(
      entries.map(async (entry) => ({
        id: entry.server.id,
        name: entry.server.name,
        transport: entry.server.transport,
        allowed: entry.allowed,
        enabled: entry.enabled,
        held:
          entry.server.approvedFingerprint !== null &&
          entry.server.seenFingerprint !== entry.server.approvedFingerprint,
        has_credential: entry.credential !== undefined,
        refused: entry.refused
          ? { reason: entry.refused.reason, since: entry.refused.since.toISOString() }
          : null,
        always_allowed: await repository.alwaysAllowedTools(userId, entry.server.id),
        tools: toolsView(tools.get(entry.server.id)),
      })),
    );
  };

  app.get(
    '/users/:user_id/mcp-servers',
    {
      schema: {
        summary: 'The MCP servers this user has, and whether each is switched on',
        tags,
        params: z.object({ user_id: userIdSchema }),
        response: {
          200: z.object({ servers: z.array(userServerView) }),
          ...errorResponses(...PER_USER, 422),
        },
      },
    },
    async (request) => ({ servers: await listForUser(request.params.user_id) }),
  );

  app.put(
    '/users/:user_id/mcp-servers/:server_id',
    {
      schema: {
        summary:
          "Switch an MCP server on or off for this user; set or remove the user's credential",
        tags,
        params: serverParams.extend({ user_id: userIdSchema }),
        body: z
          .object({
            enabled: z.boolean().optional(),
            credential: z
              .object({
                header: z
                  .string()
                  .regex(/^[A-Za-z0-9-]{1,64}$/)
                  .refine((name) => !TRANSPORT_HEADERS.has(name.toLowerCase()), {
                    message:
                      'is a header the MCP transport or HTTP itself sets: use another one (such as Authorization)',
                  })
                  .default('Authorization')
                  .describe('The header it is sent in (default Authorization)'),
                value: z
                  .string()
                  .min(1)
                  .max(4_000)
                  .regex(/^[\t\x20-\x7e]+$/, { message: 'must be printable ASCII' })
                  .describe('E.g. `Bearer <token>`: stored encrypted, never shown again'),
              })
              .nullable()
              .optional()
              .describe('An HTTP server’s credential of this user; null removes it'),
            forget_always_allowed: z
              .boolean()
              .optional()
              .describe('true: every tool of this server asks again'),
          })
          .strict(),
        response: {
          200: userServerView,
          ...errorResponses(...PER_USER, 404, 413, 415, 422),
        },
      },
    },
    async (request) => {
      const userId = request.params.user_id;
      const entry = (await repository.forUser(userId)).find(
        (candidate) => candidate.server.id === request.params.server_id,
      );
      // A server the user may not use is as unknown to them as none.
      if (!entry || (!entry.allowed && request.principal.kind !== 'admin')) {
        throw notFound('No MCP server has this id.');
      }
      const { enabled, credential, forget_always_allowed } = request.body;
      if (credential && entry.server.transport !== 'http') {
        throw new AppError('not_http', 422, 'Only an HTTP server takes a credential.');
      }
      if (credential && !cipher) {
        throw new AppError(
          'credentials_off',
          422,
          'This service stores no credentials: its administrator has not set MCP_CREDENTIALS_KEY.',
        );
      }
      await repository.setUserChoice(entry.server.id, userId, {
        ...(enabled !== undefined && { enabled }),
        ...(credential !== undefined && {
          credential:
            credential && cipher
              ? {
                  header: credential.header,
                  sealed: cipher.seal(credential.value, entry.server.id, userId),
                }
              : null,
        }),
      });
      if (forget_always_allowed) await repository.forgetAlwaysAllowed(userId, entry.server.id);
      const listed = (await listForUser(userId)).find((item) => item.id === entry.server.id);
      if (!listed) throw notFound('No MCP server has this id.');
      return listed;
    },
  );

  app.post(
    '/users/:user_id/approvals/:approval_id',
    {
      schema: {
        summary: 'Decide on a tool call waiting for this user’s approval',
        tags,
        params: z.object({
          user_id: userIdSchema,
          approval_id: z.uuid({ message: 'must be an approval id' }),
        }),
        body: z.object({ decision: z.enum(['approve', 'deny', 'always']) }).strict(),
        response: {
          200: z.object({
            id: z.uuid(),
            decision: z
              .enum(['approve', 'deny', 'always', 'expired'])
              .describe(
                'The decision in force: an earlier one, or `expired`, wins over a late one',
              ),
          }),
          ...errorResponses(...PER_USER, 404, 413, 415, 422),
        },
      },
    },
    async (request) => {
      const { user_id, approval_id } = request.params;
      const decision = await repository.decide(user_id, approval_id, request.body.decision);
      if (!decision) throw notFound('No tool call of this user waits for this approval.');
      return { id: approval_id, decision };
    },
  );
}

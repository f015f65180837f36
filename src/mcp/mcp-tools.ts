import { randomUUID } from 'node:crypto';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { jsonSchema, type ToolSet, tool } from 'ai';
import type { Logger } from 'pino';
import type { ChatEvent } from '../assistant/chat-events.ts';
import { ToolRefusal } from '../assistant/tool-refusal.ts';
import { firstCharacters } from '../first-characters.ts';
import type {
  ApprovalDecision,
  McpRepository,
  McpServerRecord,
  UserServer,
} from '../storage/mcp-repository.ts';
import { isAnswerTooLarge, MESSAGE_MAX_BYTES } from './answer-too-large.ts';
import type { CredentialCipher } from './credential-cipher.ts';
import { type McpConnection, type McpConnections, sessionExpired } from './mcp-connections.ts';
import { definitionOf, fingerprint } from './tool-fingerprint.ts';
import {
  countReasons,
  type ServerSelection,
  selectTools,
  type ToolLimits,
} from './tool-selection.ts';

export interface McpToolSettings {
  callTimeoutMs: number;
  callMaxMs: number;
  resultMaxChars: number;
  callsPerAnswer: number;
  descriptionMaxChars: number;
  approvalTimeoutMs: number;
  connectTimeoutMs: number;
  /** MCP_MAX_TOOLS and MCP_TOOL_SCHEMA_MAX_CHARS. */
  limits: ToolLimits;
}

/** What the tools of one chat are bound to. */
export interface McpChatContext {
  userId: string;
  runId: string;
  /** The chat's own signal (the client leaving, shutdown): calls and approval waits end with it. */
  signal: AbortSignal;
  /** 'ask': the door can show the question; 'refuse': calls needing approval are not run. */
  approvals: 'ask' | 'refuse';
  /** Sends an event to the door (the approval question, its decision) while the tool waits. */
  emit: (event: ChatEvent) => void;
}

/** How often a waiting call reads its approval row (any replica may have written it). */
const APPROVAL_POLL_MS = 300;
/** Users whose left-out tools this process last logged: each change is logged once. */
const LOGGED_USERS_MAX = 10_000;

export const NOT_APPROVED_BY_DOOR =
  'Not run: this tool needs the user’s approval and this conversation cannot ask for it. Tell the user the call was not approved; they can approve it from the web client or Telegram, or always allow it.';

/**
 * The tools of the MCP servers a user has (allowed by the administrator, switched on by the
 * user), for one chat: `<server>__<tool>`, with descriptions capped (they are the server's
 * text). A server whose tool definitions differ from the approved ones is held: none of its
 * tools are offered until the administrator approves the change. A server that cannot be
 * reached is left out of this chat (the reason is stored for the administrator). Of the rest,
 * at most MCP_MAX_TOOLS tools are offered, in a stable order (src/mcp/tool-selection.ts).
 */
export class McpTools {
  readonly #repository: McpRepository;
  readonly #connections: McpConnections;
  readonly #cipher: CredentialCipher | undefined;
  readonly #settings: McpToolSettings;
  readonly #logger: Logger;
  readonly #onCall: ((server: string, outcome: string, ms: number) => void) | undefined;
  /** What was last logged of each user's left-out tools, so a chat logs only a change. */
  readonly #loggedLeftOut = new Map<string, string>();

  constructor(deps: {
    repository: McpRepository;
    connections: McpConnections;
    cipher: CredentialCipher | undefined;
    settings: McpToolSettings;
    logger: Logger;
    onCall?: (server: string, outcome: string, ms: number) => void;
  }) {
    this.#repository = deps.repository;
    this.#connections = deps.connections;
    this.#cipher = deps.cipher;
    this.#settings = deps.settings;
    this.#logger = deps.logger.child({ component: 'mcp' });
    this.#onCall = deps.onCall;
  }

  async toolsFor(context: McpChatContext): Promise<ToolSet> {
    const servers = (await this.#repository.forUser(context.userId)).filter(
      (entry) => entry.allowed && entry.enabled,
    );
    if (servers.length === 0) return {};
    const ready = (
      await Promise.all(servers.map((entry) => this.#connection(entry, context)))
    ).filter((item) => item !== undefined);
    const selection = selectTools(
      ready.map(({ entry, connection }) => ({ name: entry.server.name, tools: connection.tools })),
      this.#settings.limits,
    );
    this.#logLeftOut(context.userId, selection);
    const counter = { calls: 0 };
    const tools: ToolSet = {};
    for (const { entry, connection } of ready) {
      // The chat's calls share the connection, and the one that replaces it (session expired).
      const bound = { connection };
      for (const mcpTool of selection.get(entry.server.name)?.offered ?? []) {
        tools[`${entry.server.name}__${mcpTool.name}`] = tool({
          description: capped(
            mcpTool.description ?? mcpTool.title ?? '',
            this.#settings.descriptionMaxChars,
          ),
          inputSchema: jsonSchema(mcpTool.inputSchema as Parameters<typeof jsonSchema>[0]),
          execute: (input: unknown) =>
            this.#call(entry, bound, mcpTool, input as Record<string, unknown>, context, counter),
        });
      }
    }
    return tools;
  }

  /** The server's connection for this chat; undefined when it is down or held. */
  async #connection(
    entry: UserServer,
    context: McpChatContext,
  ): Promise<{ entry: UserServer; connection: McpConnection } | undefined> {
    const { server } = entry;
    const log = this.#logger.child({ mcpServer: server.name });
    let connection: McpConnection;
    try {
      connection = await withTimeout(
        this.#connections.get(
          server,
          context.userId,
          this.#credential(entry, context.userId, log),
          entry.refused !== undefined,
        ),
        this.#settings.connectTimeoutMs,
      );
    } catch (error) {
      log.warn(
        { code: 'mcp_server_unavailable', reason: errorText(error) },
        'mcp server left out of this chat',
      );
      return undefined;
    }
    const definitions = connection.tools.map(definitionOf);
    const print = fingerprint(definitions);
    if (print !== server.seenFingerprint || server.approvedFingerprint === null) {
      await this.#repository.recordListing(server.id, print, definitions);
    }
    const approved = server.approvedFingerprint ?? print;
    if (print !== approved) {
      log.warn(
        { code: 'mcp_tools_changed', fingerprint: print },
        'mcp server held: its tool definitions changed and wait for the administrator’s approval',
      );
      return undefined;
    }
    return { entry, connection };
  }

  /** Logs the tools left out of a user's chats (counts, never schemas) when that changes. */
  #logLeftOut(userId: string, selection: Map<string, ServerSelection<Tool>>): void {
    let offered = 0;
    const leftOut = [...selection.values()].flatMap((server) => {
      offered += server.offered.length;
      return server.leftOut;
    });
    const servers = [...selection]
      .filter(([, server]) => server.leftOut.length > 0)
      .map(([name]) => name);
    const reasons = countReasons(leftOut);
    const said = leftOut.length ? `${offered} ${servers} ${JSON.stringify(reasons)}` : '';
    if ((this.#loggedLeftOut.get(userId) ?? '') === said) return;
    if (this.#loggedLeftOut.size >= LOGGED_USERS_MAX) this.#loggedLeftOut.clear();
    this.#loggedLeftOut.set(userId, said);
    if (!said) return;
    this.#logger.warn(
      { code: 'mcp_tools_left_out', offered, leftOut: leftOut.length, reasons, servers },
      'mcp tools left out of chats (MCP_MAX_TOOLS, MCP_TOOL_SCHEMA_MAX_CHARS or their names)',
    );
  }

  /** The user's own credential for this server, opened only to be sent to it. */
  #credential(entry: UserServer, userId: string, log: Logger) {
    if (!entry.credential) return undefined;
    if (!this.#cipher) {
      log.warn(
        { code: 'mcp_credentials_key_missing' },
        'a stored mcp credential cannot be opened: MCP_CREDENTIALS_KEY is not set',
      );
      return undefined;
    }
    try {
      return {
        header: entry.credential.header,
        value: this.#cipher.open(entry.credential.sealed, entry.server.id, userId),
      };
    } catch {
      log.warn(
        { code: 'mcp_credential_unreadable' },
        'a stored mcp credential does not open with MCP_CREDENTIALS_KEY',
      );
      return undefined;
    }
  }

  async #call(
    entry: UserServer,
    bound: { connection: McpConnection },
    mcpTool: Tool,
    input: Record<string, unknown>,
    context: McpChatContext,
    counter: { calls: number },
  ): Promise<string> {
    const { server } = entry;
    const started = Date.now();
    const done = (outcome: string, text: string) => {
      const ms = Date.now() - started;
      // Never the arguments or the result: the server, the tool, how long, how it ended.
      this.#logger.info(
        { mcpServer: server.name, tool: mcpTool.name, ms, outcome },
        'mcp tool call',
      );
      this.#onCall?.(server.name, outcome, ms);
      return text;
    };
    counter.calls += 1;
    if (counter.calls > this.#settings.callsPerAnswer) {
      return done(
        'over_limit',
        `Not run: this answer already made ${this.#settings.callsPerAnswer} MCP tool calls, the most one answer may make.`,
      );
    }
    if (needsApproval(server, mcpTool)) {
      const allowed = await this.#repository.alwaysAllowed(context.userId, server.id, mcpTool.name);
      if (!allowed) {
        if (context.approvals !== 'ask') return done('not_approved', NOT_APPROVED_BY_DOOR);
        const decision = await this.#ask(server, mcpTool.name, input, context);
        if (decision !== 'approve' && decision !== 'always') {
          return done(
            'not_approved',
            decision === 'deny'
              ? 'Not run: the user denied this call.'
              : 'Not run: the user did not approve this call in time.',
          );
        }
      }
    }
    try {
      const used = bound.connection;
      const call = () =>
        callMcpTool(bound.connection, mcpTool.name, input, this.#settings, context.signal);
      const result = await call().catch(async (error: unknown) => {
        if (!sessionExpired(used, error)) throw error;
        // The server no longer knows the session (HTTP 404 to its id): it did not run the
        // call. A new session, as the spec says, and the call once more on it.
        this.#logger.info(
          { mcpServer: server.name, code: 'mcp_session_expired' },
          'mcp session expired: starting a new one',
        );
        const log = this.#logger.child({ mcpServer: server.name });
        bound.connection = await withTimeout(
          this.#connections.renew(
            server,
            context.userId,
            this.#credential(entry, context.userId, log),
            used,
          ),
          this.#settings.connectTimeoutMs,
        );
        return call();
      });
      return done(result.isError ? 'tool_error' : 'ok', result.text);
    } catch (error) {
      if (context.signal.aborted) throw error;
      if (isAnswerTooLarge(error)) {
        done('too_large', '');
        throw new ToolRefusal(
          'mcp_result_too_large',
          `The MCP server ${server.name} answered with a result too large to read (over ${MESSAGE_MAX_BYTES / 1024 / 1024} MiB): ask for less.`,
        );
      }
      const timedOut = /timed out|timeout/i.test(errorText(error));
      done(timedOut ? 'timeout' : 'failed', '');
      throw new ToolRefusal(
        timedOut ? 'mcp_timeout' : 'mcp_call_failed',
        timedOut
          ? `The MCP server ${server.name} did not answer in time.`
          : `The MCP server ${server.name} failed during the call.`,
      );
    }
  }

  /** Stores the question, tells the door, and waits (bounded) for the user's decision. */
  async #ask(
    server: McpServerRecord,
    toolName: string,
    input: Record<string, unknown>,
    context: McpChatContext,
  ): Promise<ApprovalDecision> {
    const id = randomUUID();
    await this.#repository.createApproval({
      id,
      userId: context.userId,
      runId: context.runId,
      serverId: server.id,
      tool: toolName,
      arguments: input,
    });
    context.emit({
      type: 'approval',
      approval: { id, server: server.name, tool: toolName, arguments: input },
    });
    const deadline = Date.now() + this.#settings.approvalTimeoutMs;
    let decision: ApprovalDecision | undefined;
    try {
      while (!decision) {
        const row = await this.#repository.approval(id);
        if (row?.decision) {
          decision = row.decision;
          break;
        }
        if (Date.now() >= deadline) {
          decision = (await this.#repository.decide(context.userId, id, 'expired')) ?? 'expired';
          break;
        }
        await sleep(Math.min(APPROVAL_POLL_MS, deadline - Date.now()), context.signal);
      }
    } catch (error) {
      await this.#repository.decide(context.userId, id, 'expired').catch(() => {});
      throw error;
    }
    context.emit({ type: 'approval-decided', id, decision });
    return decision;
  }
}

/**
 * One tool call on a connection, with Parley's limits: the call timeout, started again by
 * each progress notification up to the longest a call may take, and the result's size
 * (the model is told when it was cut). An error result is text for the model, saying so.
 */
export async function callMcpTool(
  connection: McpConnection,
  name: string,
  input: Record<string, unknown>,
  limits: Pick<McpToolSettings, 'callTimeoutMs' | 'callMaxMs' | 'resultMaxChars'>,
  signal: AbortSignal,
): Promise<{ text: string; isError: boolean }> {
  connection.inUse += 1;
  connection.lastUsed = Date.now();
  try {
    const result = (await connection.client.callTool({ name, arguments: input }, undefined, {
      signal,
      timeout: limits.callTimeoutMs,
      resetTimeoutOnProgress: true,
      maxTotalTimeout: limits.callMaxMs,
      // Asking for progress is what lets a long call go past the timeout.
      onprogress: () => {},
    })) as CallToolResult;
    const text = capped(resultText(result), limits.resultMaxChars, true);
    return result.isError
      ? { text: `The tool reported an error: ${text}`, isError: true }
      : { text, isError: false };
  } finally {
    connection.inUse -= 1;
    connection.lastUsed = Date.now();
  }
}

/**
 * Whether a call needs its user's decision: a tool the administrator marked, or any tool not
 * read-only, where only a trusted server's own annotation can say it is.
 */
export function needsApproval(server: McpServerRecord, mcpTool: Tool): boolean {
  if (server.approvalTools.includes(mcpTool.name)) return true;
  return !(server.trusted && mcpTool.annotations?.readOnlyHint === true);
}

/** The model's view of a result: its text, with images and other media named, not sent. */
function resultText(result: CallToolResult): string {
  const parts: string[] = [];
  for (const item of result.content ?? []) {
    switch (item.type) {
      case 'text':
        parts.push(item.text);
        break;
      case 'image':
      case 'audio':
        parts.push(
          `[${item.type} ${item.mimeType}, ${Math.floor((item.data.length * 3) / 4)} bytes, not shown]`,
        );
        break;
      case 'resource':
        parts.push(
          'text' in item.resource ? String(item.resource.text) : `[resource ${item.resource.uri}]`,
        );
        break;
      case 'resource_link':
        parts.push(`[resource ${item.uri}]`);
        break;
    }
  }
  if (parts.length === 0 && result.structuredContent)
    parts.push(JSON.stringify(result.structuredContent));
  return parts.join('\n');
}

/** Cut between characters: half an emoji is a lone surrogate in the model server's JSON. */
function capped(text: string, max: number, tell = false): string {
  const kept = firstCharacters(text, max);
  if (kept.length === text.length) return text;
  return tell
    ? `${kept}\n[The result was cut: ${max} of its ${characterCount(text)} characters are shown.]`
    : `${firstCharacters(text, max - 1)}…`;
}

function characterCount(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

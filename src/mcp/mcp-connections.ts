import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCResultResponse,
  McpError,
  type RequestId,
  type Tool,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { APP_VERSION } from '../version.ts';
import { ANSWER_TOO_LARGE, AnswerTooLargeError, MESSAGE_MAX_BYTES } from './answer-too-large.ts';
import { LenientOutputValidator } from './lenient-output-validator.ts';
import { ProcessGroupTransport } from './process-group-transport.ts';

/** What a connection is made from: the server's stored definition. */
export interface ServerEndpoint {
  id: string;
  name: string;
  transport: 'stdio' | 'http';
  command: string | null;
  args: string[];
  env: Record<string, string>;
  url: string | null;
  sharedProcess: boolean;
}

/** A user's own credential for an HTTP server, already decrypted: sent to that server only. */
export interface ServerCredential {
  header: string;
  value: string;
}

/** One client connection to one server, for one user (or every user of a shared process). */
export interface McpConnection {
  client: Client;
  tools: Tool[];
  /** The server had more pages of tools than Parley reads: `tools` is the first of them. */
  listingCut: boolean;
  /** Calls under way: an idle sweep leaves a connection in use alone. */
  inUse: number;
  lastUsed: number;
}

/**
 * The state of a server's latest listing: cut at the page cap, and since when a listing the
 * server asked for has been failing (null: the definitions in use are its latest).
 */
export interface ListingState {
  cut: boolean;
  staleSince: Date | null;
}

/** Why a server is down, as the administrator reads it. */
export interface ServerFailure {
  reason: string;
  stderr: string | undefined;
}

export interface McpConnectionSettings {
  connectTimeoutMs: number;
  idleMs: number;
  logger: Logger;
  /** Called when a server fails (null: it answers again), to store the reason for the admin. */
  onFailure: (serverId: string, failure: ServerFailure | null) => void;
  /**
   * Called when an HTTP server refuses one user (401 or 403: their credential, or none), and
   * with null when it takes them again: the user's own status, not the server's, which goes
   * on answering the others.
   */
  onRefused: (serverId: string, userId: string, reason: string | null) => void;
  /** Called after each listing of a server's tools, to store its state for the status. */
  onListing: (serverId: string, state: ListingState) => void;
}

const BACKOFF_FIRST_MS = 1_000;
const BACKOFF_MAX_MS = 60_000;
/** Pages of `tools/list` read at most: a server that pages forever must not hold a chat. */
export const MAX_TOOL_PAGES = 20;
/**
 * Listings tried after `tools/list_changed` before waiting for the next use of the connection
 * (1 s, 2 s, 4 s, 8 s, 16 s apart): a server that cannot list is not asked every second forever.
 */
const RELIST_TRIES = 6;

interface Slot {
  connection: Promise<McpConnection> | undefined;
  /** Failures in a row, and when the next attempt may be made. */
  failures: number;
  retryAt: number;
  lastReason: string | undefined;
  /** The last failure was the server refusing this slot's user (HTTP 401 or 403). */
  refused: boolean;
  /** A listing after `tools/list_changed` under way: the next use waits for it. */
  relisting: Promise<void> | undefined;
  /** Another `tools/list_changed` came while listing: list once more after. */
  relistAgain: boolean;
  relistFailures: number;
  relistTimer: NodeJS.Timeout | undefined;
  /** Since when listings after `tools/list_changed` have failed (the older tools are used). */
  staleSince: Date | undefined;
  close?: () => Promise<void>;
}

/**
 * The MCP client connections of this process. No session is shared between users: each user
 * has their own connection to an HTTP server (with their own credential, if any) and their
 * own process of a stdio server, unless the administrator marked that server as holding no
 * per-user state (`shared_process`), where every user's calls go to one process. A server
 * that fails (it exits, refuses, times out) is tried again on its next use, no sooner than
 * its back-off (1 s, doubling, at most 60 s); an unused connection is closed after the idle
 * time; `closeAll` ends every process group at shutdown. A server's tools are listed on
 * connecting and again when it sends `tools/list_changed`.
 */
export class McpConnections {
  readonly #settings: McpConnectionSettings;
  readonly #slots = new Map<string, Slot>();
  readonly #sweep: NodeJS.Timeout;
  #closed = false;

  constructor(settings: McpConnectionSettings) {
    this.#settings = settings;
    this.#sweep = setInterval(() => this.#closeIdle(), Math.min(settings.idleMs, 30_000));
    this.#sweep.unref();
  }

  /**
   * The connection of this user to this server, made (and its tools listed) if need be.
   * `storedRefusal`: a refusal of this user is stored (by an earlier process, or another
   * replica): a new connection the server takes clears it, as it clears one met here.
   */
  async get(
    server: ServerEndpoint,
    userId: string,
    credential: ServerCredential | undefined,
    storedRefusal = false,
  ): Promise<McpConnection> {
    if (this.#closed) throw new Error('shutting down');
    const key = slotKey(server, userId, credential);
    let slot = this.#slots.get(key);
    if (!slot) {
      slot = {
        connection: undefined,
        failures: 0,
        retryAt: 0,
        lastReason: undefined,
        refused: false,
        relisting: undefined,
        relistAgain: false,
        relistFailures: 0,
        relistTimer: undefined,
        staleSince: undefined,
      };
      this.#slots.set(key, slot);
    }
    if (!slot.connection) {
      if (Date.now() < slot.retryAt) {
        throw new ServerDownError(slot.lastReason ?? 'failed', slot.retryAt - Date.now());
      }
      slot.connection = this.#connect(server, userId, credential, slot, storedRefusal);
      return slot.connection;
    }
    const connection = slot.connection;
    if (slot.relisting) {
      // The server said its tools changed: this chat gets the new ones if they can be listed.
      await slot.relisting;
    } else if (slot.staleSince && !slot.relistTimer) {
      // Its tries ran out: one more, in the background (this chat uses the older tools).
      void this.#relist(server, slot, connection);
    }
    return connection;
  }

  /**
   * A new connection in place of `stale`, whose HTTP session the server no longer knows (it
   * answered 404 to its id: the spec's way to say a new session must be started). Closed on
   * purpose, so no failure or back-off is recorded; a connection another call already
   * renewed is used as it is.
   */
  async renew(
    server: ServerEndpoint,
    userId: string,
    credential: ServerCredential | undefined,
    stale: McpConnection,
  ): Promise<McpConnection> {
    const slot = this.#slots.get(slotKey(server, userId, credential));
    const current = slot?.connection;
    if (
      slot &&
      current &&
      (await current.catch(() => undefined)) === stale &&
      slot.connection === current
    ) {
      const close = slot.close;
      slot.connection = undefined;
      slot.close = undefined;
      // Other calls still under way on it get their own 404 and renew too (closing it now
      // would end them as failures): closed once none is.
      const closeWhenIdle = () => {
        if (stale.inUse === 0) void close?.();
        else setTimeout(closeWhenIdle, 1_000).unref();
      };
      closeWhenIdle();
    }
    return this.get(server, userId, credential);
  }

  /** Ends every connection and process (shutdown); later `get`s are refused. */
  async closeAll(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweep);
    await Promise.allSettled([...this.#slots.values()].map((slot) => slot.close?.()));
    this.#slots.clear();
  }

  /** Ends the connections to a server (it was disabled, deleted or changed). */
  async closeServer(serverId: string): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const [key, slot] of this.#slots) {
      if (key.startsWith(`${serverId}:`)) {
        this.#slots.delete(key);
        if (slot.close) closing.push(slot.close());
      }
    }
    await Promise.allSettled(closing);
  }

  /** Not async: the promise it returns is the slot's own, which `end` compares against. */
  #connect(
    server: ServerEndpoint,
    userId: string,
    credential: ServerCredential | undefined,
    slot: Slot,
    storedRefusal = false,
  ): Promise<McpConnection> {
    const { logger, connectTimeoutMs } = this.#settings;
    const log = logger.child({ mcpServer: server.name });
    const client = new Client(
      { name: 'parley', version: APP_VERSION },
      {
        // One tool's broken output schema must not cost the server its listing.
        jsonSchemaValidator: new LenientOutputValidator((reason) =>
          log.warn(
            { code: 'mcp_output_schema_unusable', reason },
            'a tool of this mcp server has an output schema that does not compile: its results are not checked against it',
          ),
        ),
      },
    );
    const stdio =
      server.transport === 'stdio' && server.command
        ? new ProcessGroupTransport({ command: server.command, args: server.args, env: server.env })
        : undefined;
    // Requests whose answer is an SSE stream still under way (see `watchAnswerStreams`).
    const streaming = new Set<RequestId>();
    const http = stdio
      ? undefined
      : new StreamableHTTPClientTransport(new URL(server.url as string), {
          requestInit: credential ? { headers: { [credential.header]: credential.value } } : {},
          fetch: watchAnswerStreams(streaming, (id, tooLarge) => {
            // The stream ended without the result (and cannot be resumed), or its event was
            // too long to read: the call fails now rather than waiting out its timeout.
            http?.onmessage?.({
              jsonrpc: '2.0',
              id,
              error: tooLarge
                ? { code: ANSWER_TOO_LARGE, message: tooLarge.message }
                : {
                    code: ErrorCode.ConnectionClosed,
                    message: 'the server ended its answer before the result',
                  },
            });
          }),
        });
    const transport = stdio ?? (http as StreamableHTTPClientTransport);
    if (http) {
      // Called before the client's own handler (the client chains it on connecting).
      http.onmessage = (message) => {
        if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
          if (message.id !== undefined) streaming.delete(message.id);
        }
      };
    }
    let ended = false;
    const end = (reason: string, refused = false) => {
      if (ended) return;
      ended = true;
      if (slot.connection === connecting) slot.connection = undefined;
      slot.close = undefined;
      clearTimeout(slot.relistTimer);
      slot.relistTimer = undefined;
      this.#failed(server, userId, slot, { reason, refused }, stdio?.stderrTail, log);
    };
    let closingOnPurpose = false;
    slot.close = async () => {
      closingOnPurpose = true;
      clearTimeout(slot.relistTimer);
      slot.relistTimer = undefined;
      await client.close().catch(() => {});
      await stdio?.close();
    };
    let connected = false;
    client.onclose = () => {
      // While connecting, the failure is told by the connect's own error (below).
      if (closingOnPurpose || !connected) return;
      const exit = stdio?.exit;
      end(
        exit
          ? `the server process exited (${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`})`
          : 'the connection closed',
      );
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      void this.#relist(server, slot, connecting);
    });
    const connecting = (async () => {
      const started = Date.now();
      try {
        const signal = AbortSignal.timeout(connectTimeoutMs);
        await client.connect(transport, { signal, timeout: connectTimeoutMs });
        const { tools, cut } = await listTools(
          client,
          Math.max(1, connectTimeoutMs - (Date.now() - started)),
          log,
        );
        connected = true;
        // A refusal is cleared whether it was met by this slot or only stored: one stored
        // before a restart, or by another replica, has no slot here that remembers it.
        if (slot.refused || storedRefusal) this.#settings.onRefused(server.id, userId, null);
        if (!slot.refused && (slot.failures > 0 || slot.lastReason)) {
          this.#settings.onFailure(server.id, null);
        }
        slot.refused = false;
        slot.failures = 0;
        slot.lastReason = undefined;
        slot.relistFailures = 0;
        slot.staleSince = undefined;
        this.#settings.onListing(server.id, { cut, staleSince: null });
        log.info(
          { ms: Date.now() - started, tools: tools.length, pid: stdio?.pid },
          'mcp server connected',
        );
        return {
          client,
          tools,
          listingCut: cut,
          inUse: 0,
          lastUsed: Date.now(),
        } satisfies McpConnection;
      } catch (error) {
        const reason = describeFailure(error, stdio?.exit);
        closingOnPurpose = true;
        await client.close().catch(() => {});
        await stdio?.close();
        end(reason, server.transport === 'http' && refusedStatus(error));
        throw new ServerDownError(reason, slot.retryAt - Date.now(), { cause: error });
      }
    })();
    return connecting;
  }

  /**
   * Lists a connection's tools again after the server said they changed. A failed listing
   * keeps the older tools in use, says since when they are stale, and is tried again after a
   * back-off (1 s, doubling), RELIST_TRIES times; then on the connection's next use.
   */
  #relist(server: ServerEndpoint, slot: Slot, connecting: Promise<McpConnection>): Promise<void> {
    if (slot.relisting) {
      slot.relistAgain = true;
      return slot.relisting;
    }
    clearTimeout(slot.relistTimer);
    slot.relistTimer = undefined;
    const log = this.#settings.logger.child({ mcpServer: server.name });
    const current = () => slot.connection === connecting && !this.#closed;
    let listed = false;
    slot.relisting = (async () => {
      const connection = await connecting.catch(() => undefined);
      // Down or replaced: the next connection lists its tools anyway.
      if (!connection || !current()) return;
      try {
        const { tools, cut } = await listTools(
          connection.client,
          this.#settings.connectTimeoutMs,
          log,
        );
        listed = true;
        if (!current()) return;
        connection.tools = tools;
        connection.listingCut = cut;
        if (slot.staleSince) {
          log.info(
            {
              code: 'mcp_tools_listed_again',
              tools: tools.length,
              staleMs: Date.now() - slot.staleSince.getTime(),
            },
            'mcp tool listing is fresh again',
          );
        }
        slot.relistFailures = 0;
        slot.staleSince = undefined;
        this.#settings.onListing(server.id, { cut, staleSince: null });
      } catch (error) {
        if (!current()) return;
        slot.relistFailures += 1;
        slot.staleSince ??= new Date();
        const retry = slot.relistFailures < RELIST_TRIES;
        const backoff = Math.min(BACKOFF_FIRST_MS * 2 ** (slot.relistFailures - 1), BACKOFF_MAX_MS);
        log.warn(
          {
            code: 'mcp_tools_stale',
            reason: describeFailure(error, undefined),
            failures: slot.relistFailures,
            retryInMs: retry ? backoff : null,
          },
          'mcp tool listing failed after tools/list_changed: its older tools stay in use',
        );
        this.#settings.onListing(server.id, {
          cut: connection.listingCut,
          staleSince: slot.staleSince,
        });
        if (retry) {
          slot.relistTimer = setTimeout(() => {
            slot.relistTimer = undefined;
            void this.#relist(server, slot, connecting);
          }, backoff);
          slot.relistTimer.unref();
        }
      }
    })().finally(() => {
      slot.relisting = undefined;
      // A change announced while listing may be missing from what was listed.
      if (slot.relistAgain) {
        slot.relistAgain = false;
        if (listed) void this.#relist(server, slot, connecting);
      }
    });
    return slot.relisting;
  }

  #failed(
    server: ServerEndpoint,
    userId: string,
    slot: Slot,
    { reason, refused }: { reason: string; refused: boolean },
    stderr: string | undefined,
    log: Logger,
  ): void {
    slot.failures += 1;
    slot.lastReason = reason;
    slot.refused = refused;
    const backoff = Math.min(BACKOFF_FIRST_MS * 2 ** (slot.failures - 1), BACKOFF_MAX_MS);
    slot.retryAt = Date.now() + backoff;
    if (refused) {
      // This user's credential (or its absence), not the server: the others it still answers.
      log.warn(
        { code: 'mcp_user_refused', reason, retryInMs: backoff },
        'mcp server refused a user',
      );
      this.#settings.onRefused(server.id, userId, reason);
      return;
    }
    // The reason is Parley's own words; the server's stderr goes to the database only.
    log.warn({ code: 'mcp_server_down', reason, retryInMs: backoff }, 'mcp server is down');
    this.#settings.onFailure(server.id, { reason, stderr: stderr || undefined });
  }

  #closeIdle(): void {
    const now = Date.now();
    for (const [key, slot] of this.#slots) {
      if (!slot.connection) continue;
      slot.connection.then(
        (connection) => {
          if (connection.inUse === 0 && now - connection.lastUsed >= this.#settings.idleMs) {
            if (this.#slots.get(key) === slot) this.#slots.delete(key);
            void slot.close?.();
          }
        },
        () => {},
      );
    }
  }
}

/**
 * An HTTP answer of 401 or 403 to connecting: the server refused who asked. HTTP servers take
 * no credential but each user's own, so this is that user's standing, not the server's.
 */
function refusedStatus(error: unknown): boolean {
  const code = codeOf(error);
  const status = typeof code === 'number' ? code : statusInMessage(error);
  return status === 401 || status === 403;
}

/** The error's code, or its cause's: the SDK's StreamableHTTPError carries the HTTP status. */
function codeOf(error: unknown): unknown {
  return (
    (error as { code?: unknown })?.code ?? (error as { cause?: { code?: unknown } })?.cause?.code
  );
}

/** An HTTP status named in the error's message (`… HTTP 401 …`), never the rest of its words. */
function statusInMessage(error: unknown): number | undefined {
  const message = error instanceof Error ? error.message : String(error);
  const status = /\bHTTP (\d{3})\b/.exec(message)?.[1];
  return status ? Number(status) : undefined;
}

/** A server that is down: why, and how long until it is tried again. */
export class ServerDownError extends Error {
  readonly retryInMs: number;
  constructor(reason: string, retryInMs: number, options?: ErrorOptions) {
    super(reason, options);
    this.name = 'ServerDownError';
    this.retryInMs = Math.max(0, retryInMs);
  }
}

/**
 * Whether a call failed because the server no longer knows the connection's HTTP session: a
 * 404 to a request that carried an `Mcp-Session-Id`.
 */
export function sessionExpired(connection: McpConnection, error: unknown): boolean {
  const transport = connection.client.transport;
  return (
    error instanceof StreamableHTTPError &&
    error.code === 404 &&
    transport instanceof StreamableHTTPClientTransport &&
    transport.sessionId !== undefined
  );
}

/**
 * The fetch of an HTTP transport, watching the answers:
 * - Their size: a JSON body or an SSE event over MESSAGE_MAX_BYTES is not read on (the SDK
 *   would hold it whole and parse it; its SSE parser takes seconds per megabyte on the event
 *   loop). A JSON body fails its request with AnswerTooLargeError; an SSE event's request is
 *   answered at once through `endedEarly`, with that error.
 * - SSE streams that answer requests: the SDK waits for a result that a stream ended
 *   (cleanly or cut) without sending, until the call's timeout. A stream that ends with its
 *   request unanswered, and that carried no event id (so the SDK will not resume it), is
 *   reported through `endedEarly`, once the SDK has read it all.
 */
/** Stands for a line already past its first characters (no `id:` field can start here). */
const MID_LINE = '\u0000';

function watchAnswerStreams(
  streaming: Set<RequestId>,
  endedEarly: (id: RequestId, tooLarge?: AnswerTooLargeError) => void,
): FetchLike {
  return async (url, init) => {
    const response = await fetch(url, init);
    if (!response.ok || !response.body) return response;
    const sse = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    const id = sse ? requestIdOf(init?.body) : undefined;
    if (id !== undefined) streaming.add(id);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    /** The current line's first characters while fewer than 3, else MID_LINE. */
    let lineStart = '';
    let resumable = false;
    /** Characters of a JSON body so far; of an SSE stream since its last event ended. */
    let size = 0;
    /** The last characters of the previous chunk: an event's blank line may span two. */
    let edge = '';
    const ended = () => {
      if (id === undefined) return;
      // After the SDK's own reading of the last bytes (promise jobs, all done by then).
      setTimeout(() => {
        if (streaming.delete(id) && !resumable) endedEarly(id);
      }, 10);
    };
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            controller.close();
            ended();
            return;
          }
          const chunk = decoder.decode(value, { stream: true });
          if (sse) {
            // Only a line's first characters can make it an `id:` field: kept across chunks as
            // long as they could (a long data line is never scanned again: linear time).
            const text = lineStart + chunk;
            if (/(^|\n)id:/.test(text)) resumable = true;
            const rest = text.slice(text.lastIndexOf('\n') + 1);
            lineStart = rest.length < 3 ? rest : MID_LINE;
            const joined = edge + chunk;
            const end = Math.max(joined.lastIndexOf('\n\n'), joined.lastIndexOf('\r\n\r\n'));
            size = end === -1 ? size + chunk.length : joined.length - end;
            edge = joined.slice(-3);
          } else {
            size += chunk.length;
          }
          if (size > MESSAGE_MAX_BYTES) {
            const tooLarge = new AnswerTooLargeError(size);
            if (id !== undefined && streaming.delete(id)) endedEarly(id, tooLarge);
            controller.error(tooLarge);
            await reader.cancel(tooLarge).catch(() => {});
            return;
          }
          controller.enqueue(value);
        } catch (error) {
          controller.error(error);
          ended();
        }
      },
      cancel: (reason) => {
        if (id !== undefined) streaming.delete(id);
        return reader.cancel(reason);
      },
    });
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

function requestIdOf(body: unknown): RequestId | undefined {
  if (typeof body !== 'string') return undefined;
  try {
    const message = JSON.parse(body) as { method?: unknown; id?: unknown };
    return typeof message.method === 'string' &&
      (typeof message.id === 'string' || typeof message.id === 'number')
      ? message.id
      : undefined;
  } catch {
    return undefined;
  }
}

/** A server's tools, at most MAX_TOOL_PAGES pages of them; `cut` when it had more. */
async function listTools(
  client: Client,
  timeoutMs: number,
  log: Logger,
): Promise<{ tools: Tool[]; cut: boolean }> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    const listed = await client.listTools(cursor ? { cursor } : undefined, { timeout: timeoutMs });
    tools.push(...listed.tools);
    cursor = listed.nextCursor;
    if (!cursor) return { tools, cut: false };
  }
  log.warn(
    { code: 'mcp_tool_listing_cut', pages: MAX_TOOL_PAGES, tools: tools.length },
    'mcp tool listing cut: the server had more pages than Parley reads',
  );
  return { tools, cut: true };
}

/** One key per process or session: per user, or per server for a shared stdio process. */
function slotKey(
  server: ServerEndpoint,
  userId: string,
  credential: ServerCredential | undefined,
): string {
  if (server.transport === 'stdio' && server.sharedProcess) return `${server.id}:*`;
  // A changed credential is a new session (the old one idles out).
  const secret = credential
    ? createHash('sha256')
        .update(`${credential.header}\n${credential.value}`)
        .digest('hex')
        .slice(0, 16)
    : '-';
  return `${server.id}:${userId}:${secret}`;
}

function describeFailure(
  error: unknown,
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined,
): string {
  if (exit) {
    return `the server process exited while starting (${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`})`;
  }
  const code = codeOf(error);
  if (typeof code === 'number' && code >= 100 && code < 600) {
    return `the server answered HTTP ${code}`;
  }
  if (typeof code === 'string') return `could not start or reach the server (${code})`;
  if (
    error instanceof Error &&
    (error.name === 'TimeoutError' || /timed out/i.test(error.message))
  ) {
    return 'the server did not answer in time';
  }
  // Never the server's own words (an error body might echo what was sent, a credential
  // included): its HTTP status, or the kind of error.
  const status = statusInMessage(error);
  if (status) return `the server answered HTTP ${status}`;
  // A JSON-RPC error's code is the server's answer; a timeout's code is the SDK's own.
  if (error instanceof McpError && error.code !== ErrorCode.RequestTimeout) {
    return `the server answered JSON-RPC error ${error.code}`;
  }
  return `could not connect (${error instanceof Error ? error.name : 'error'})`;
}

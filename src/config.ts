import { existsSync, readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import proxyaddr from '@fastify/proxy-addr';
import { z } from 'zod';
import { GRAPH_PROMPT_MIN_CHARS } from './graph/graph-summary.ts';
import { parseCredentialsKey } from './mcp/credential-cipher.ts';
import { usualTimezoneSpelling } from './place-and-language.ts';
import { AUTO, sizeBytes } from './storage/shared-buffers.ts';

/**
 * Every setting Parley reads, parsed once at start from the environment (and an optional
 * `.env` file) into a frozen object. Names are the upper-case environment variable names of
 * the spec; each part of the application receives only the values it uses.
 */

const BOOLEAN_WORDS: Record<string, boolean> = {
  true: true,
  false: false,
  '1': true,
  '0': false,
  yes: true,
  no: false,
};

const flag = (fallback: boolean) =>
  z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw.trim() === '') return fallback;
      const value = BOOLEAN_WORDS[raw.trim().toLowerCase()];
      if (value === undefined) {
        ctx.addIssue({ code: 'custom', message: 'accepts true, false, 1, 0, yes or no' });
        return z.NEVER;
      }
      return value;
    });

const emptyAsUndefined = (raw: unknown) =>
  typeof raw === 'string' && raw.trim() === '' ? undefined : raw;

/**
 * The TRUST_PROXY entry proxy-addr (what Fastify's trustProxy compiles with) rejects, or
 * undefined when it accepts them all: names (`loopback`…), addresses, address/prefix and
 * address/netmask. Asking proxy-addr itself means the config accepts exactly what the server
 * would, instead of failing at start with Fastify's own error.
 */
function rejectedProxyEntry(entries: string[]): string | undefined {
  try {
    proxyaddr.compile(entries);
    return undefined;
  } catch {
    return entries.find((entry) => {
      try {
        proxyaddr.compile(entry);
        return false;
      } catch {
        return true;
      }
    });
  }
}

const text = () => z.preprocess(emptyAsUndefined, z.string().optional());
const textOr = (fallback: string) => z.preprocess(emptyAsUndefined, z.string().default(fallback));
const integer = (fallback: number, min: number, max: number) =>
  z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number({ message: `accepts a whole number from ${min} to ${max}` })
      .int({ message: `accepts a whole number from ${min} to ${max}` })
      .min(min, { message: `accepts a whole number from ${min} to ${max}` })
      .max(max, { message: `accepts a whole number from ${min} to ${max}` })
      .default(fallback),
  );
/** A whole number with no default (unset: the component's own choice). */
const optionalInteger = (min: number, max: number) =>
  z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number({ message: `accepts a whole number from ${min} to ${max}` })
      .int({ message: `accepts a whole number from ${min} to ${max}` })
      .min(min, { message: `accepts a whole number from ${min} to ${max}` })
      .max(max, { message: `accepts a whole number from ${min} to ${max}` })
      .optional(),
  );
const decimal = (fallback: number, min: number, max: number) =>
  z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number({ message: `accepts a number from ${min} to ${max}` })
      .min(min, { message: `accepts a number from ${min} to ${max}` })
      .max(max, { message: `accepts a number from ${min} to ${max}` })
      .default(fallback),
  );
const url = (protocols: RegExp, hint: string) =>
  z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((value) => URL.canParse(value) && protocols.test(new URL(value).protocol), {
        message: `accepts ${hint}`,
      })
      .optional(),
  );

const httpUrlOr = (fallback: string) =>
  z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .default(fallback)
      .refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), {
        message: 'accepts an http:// or https:// URL',
      }),
  );

const MIB = 1024 * 1024;

/**
 * An IPv6 address may be written as in a URL, `[::1]`: the listener and the loopback check
 * take it bare (a bracketed one would be looked up as a host name, and fail).
 */
const listenHost = textOr('127.0.0.1').transform((host) => {
  const bare = /^\[(.*)\]$/.exec(host.trim())?.[1];
  return bare !== undefined && isIPv6(bare) ? bare : host;
});

export const configSchema = z.object({
  // Server
  HOST: listenHost,
  PORT: integer(8000, 0, 65535),
  LOG_LEVEL: z.preprocess(
    emptyAsUndefined,
    z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
        message: 'accepts fatal, error, warn, info, debug, trace or silent',
      })
      .default('info'),
  ),
  API_TOKEN: text(),
  /**
   * Refuse to serve an address other than loopback without API_TOKEN (everyone who reached it
   * would be the administrator). false serves it anyway, as Redis's protected mode does.
   */
  PROTECTED_MODE: flag(true),
  /** How long a web client's sign-in lasts (it ends sooner when its key expires or is revoked). */
  WEB_SESSION_HOURS: integer(168, 1, 8760),
  SHUTDOWN_GRACE_MS: integer(10_000, 0, 600_000),
  /**
   * Longest a client may take to send a whole request (headers and body, an upload included);
   * then 408 and the connection is closed. Answers are not limited by it: a chat's stream
   * starts once its small request has arrived.
   */
  REQUEST_TIMEOUT_MS: integer(600_000, 1_000, 86_400_000),
  /**
   * Which proxies in front may name the client's address (X-Forwarded-For) and protocol:
   * a hop count, or addresses, ranges (`10.0.0.0/8` or `10.0.0.0/255.0.0.0`) and `loopback`,
   * `linklocal`, `uniquelocal`: what Fastify's trustProxy (proxy-addr) accepts.
   * Unset: the socket's address, so a client cannot pick the address it is counted under.
   */
  TRUST_PROXY: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .transform((raw, ctx) => {
        const value = raw.trim();
        if (/^\d+$/.test(value)) {
          const hops = Number(value);
          if (hops >= 1 && hops <= 10) return hops;
          ctx.addIssue({ code: 'custom', message: 'a hop count is 1 to 10' });
          return z.NEVER;
        }
        const entries = value.split(',').map((entry) => entry.trim());
        const bad = rejectedProxyEntry(entries);
        if (bad === undefined) return entries;
        ctx.addIssue({
          code: 'custom',
          message: `${JSON.stringify(bad)} is not a hop count, an address, an address/prefix or address/netmask range, loopback, linklocal or uniquelocal`,
        });
        return z.NEVER;
      })
      .optional(),
  ),
  /** Processes serving the port (node:cluster); `auto` = one per core. Needs DATABASE_URL. */
  PARLEY_WORKERS: z.preprocess(
    (raw) => (typeof raw === 'string' ? emptyAsUndefined(raw.trim().toLowerCase()) : raw),
    z
      .string()
      .default('1')
      .refine(
        (value) => value === 'auto' || (/^\d{1,3}$/.test(value) && +value >= 1 && +value <= 256),
        {
          message: 'accepts auto or a whole number from 1 to 256',
        },
      )
      .transform((value) => (value === 'auto' ? ('auto' as const) : Number(value))),
  ),

  // Accounts: per-user limits (README "Giving Parley to several people"); 0 = no limit.
  /** Chats a user may start per minute, over every door (/chat, OpenAI API, Telegram). */
  LIMIT_CHATS_PER_MINUTE: integer(20, 0, 100_000),
  /** Model input + output tokens per day of the user's timezone. */
  LIMIT_TOKENS_PER_DAY: integer(0, 0, 1_000_000_000_000),
  /** Megabytes a user may upload for ingestion per day of the user's timezone. */
  LIMIT_INGEST_MB_PER_DAY: integer(200, 0, 10_000_000),
  /** Megabytes of private documents a user may keep. */
  LIMIT_STORAGE_MB: integer(500, 0, 10_000_000),
  /** Also limit requests made with API_TOKEN (a trusted server in front is not, by default). */
  LIMITS_APPLY_TO_ADMIN: flag(false),

  // Metrics
  /** Serve GET /metrics (Prometheus text format). */
  METRICS_ENABLED: flag(false),
  /** Bearer token for /metrics instead of API_TOKEN (a scraper need not hold the API token). */
  METRICS_TOKEN: text(),

  // Storage
  DATA_DIR: textOr('./data'),
  DATABASE_URL: url(/^postgres(ql)?:$/, 'a postgres:// or postgresql:// URL'),
  DB_POOL_MAX: integer(10, 1, 200),
  /** How long a query waits for a pooled connection before Parley answers that it is busy. */
  DB_POOL_WAIT_MS: integer(60_000, 100, 600_000),
  /** With DATABASE_URL: how long a query may wait in silence for the server's reply. */
  DB_REPLY_TIMEOUT_MS: integer(60_000, 1_000, 3_600_000),
  /**
   * With DATABASE_URL: how long a replica that died holding a user's chat turn can keep that
   * user waiting (its heartbeat, every third of this, stopped).
   */
  CHAT_TURN_TTL_SECONDS: integer(20, 2, 300),
  /**
   * How long a process owns the background jobs it claimed (feedback, memory decisions,
   * reminder notices): a process that dies delays them this much. Unset: each kind's own
   * (feedback 300 s, the others 120 s). A job never starts in the last half of its lease.
   */
  JOB_LEASE_SECONDS: z.preprocess(
    emptyAsUndefined,
    z.coerce
      .number({ message: 'accepts a whole number from 10 to 3600' })
      .int({ message: 'accepts a whole number from 10 to 3600' })
      .min(10, { message: 'accepts a whole number from 10 to 3600' })
      .max(3_600, { message: 'accepts a whole number from 10 to 3600' })
      .optional(),
  ),
  /**
   * Postgres shared_buffers of the embedded engine: memory it keeps for good. `auto` sizes
   * it at start to hold the vector indexes (src/storage/shared-buffers.ts).
   */
  EMBEDDED_DB_SHARED_BUFFERS: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      // Postgres needs 128kB at the least, and PGlite's 32-bit WASM memory holds it with the
      // rest: outside this range the embedded engine failed to start with no reason given.
      .refine((value) => value === AUTO || isSharedBuffersSize(value), {
        message: 'accepts auto or a size from 128kB to 1GB, such as 16MB, 512kB or 1GB',
      })
      .default(AUTO),
  ),

  // Limits on client input
  MESSAGE_MAX_CHARS: integer(16_000, 1, 1_000_000),
  INGEST_MAX_BYTES: integer(50 * MIB, 1, 2 * 1024 * MIB),
  IMAGE_MAX_BYTES: integer(10 * MIB, 1, 200 * MIB),

  // Models
  LLM_BASE_URL: url(/^https?:$/, 'an http:// or https:// URL'),
  LLM_API_KEY: text(),
  LLM_MODEL: text(),
  LLM_MODEL_PATH: text(),
  /** CPU threads of the embedded model (default: llama.cpp's choice, the physical cores). */
  LLM_THREADS: optionalInteger(1, 256),
  /** Abort a model call when the first token, or any next one, takes longer than this. */
  LLM_CHUNK_TIMEOUT_MS: integer(120_000, 1_000, 3_600_000),
  /** Retries of a model call that failed before streaming (HTTP 429/5xx, connection refused). */
  LLM_MAX_RETRIES: integer(1, 0, 10),
  TOOL_TIMEOUT_MS: integer(30_000, 100, 3_600_000),
  /** Model calls in one chat: answer, tool calls and the answers after them. */
  CHAT_MAX_STEPS: integer(8, 1, 50),
  /** Estimated tokens of history sent with each chat; older turns are dropped first. */
  HISTORY_MAX_TOKENS: integer(8_000, 100, 1_000_000),
  SSE_KEEPALIVE_MS: integer(15_000, 100, 600_000),
  /**
   * The longest a resumable answer (one that goes on without its client) may take, listened
   * to or not; it is then stopped and kept as far as it went.
   */
  ANSWER_MAX_SECONDS: integer(600, 10, 86_400),
  /** How long a resumable answer's events can still be replayed after it ended. */
  RUN_EVENTS_KEEP_HOURS: integer(24, 1, 8_760),

  // Features (spec §1)
  GRAPH_ENABLED: flag(false),
  CONV_RAG_ENABLED: flag(false),
  /**
   * First delay before a memory decision that failed is tried again; doubles (5 tries in all,
   * then it is given up). Whole seconds, rounded up.
   */
  MEMORY_RETRY_MS: integer(5_000, 1_000, 3_600_000),
  /**
   * Who titles a conversation: `model` asks the chat model after the first answer, in the
   * background (the question's first words until then); `question` keeps its first words.
   */
  CONVERSATION_TITLES: z.preprocess(
    emptyAsUndefined,
    z.enum(['model', 'question'], { message: 'accepts model or question' }).default('model'),
  ),
  /** Conversations a user may keep (new ones are refused beyond it; deleting makes room). */
  CONVERSATIONS_PER_USER: integer(10_000, 1, 1_000_000),
  CRAG_ENABLED: flag(false),
  VISION_ENABLED: flag(false),
  VISION_MODEL_ID: text(),
  VISION_MAX_TOKENS: integer(512, 1, 32_768),
  QUERY_REWRITE_ENABLED: flag(false),

  // Verbosity and display (spec §1)
  RAG_VERBOSE: flag(false),
  RAG_SHOW_SOURCES: flag(false),
  LANGGRAPH_VERBOSE: flag(false),
  THINK_VERBOSE: flag(false),

  // Web search (tools issue)
  WEB_SEARCH_PROVIDER: z.preprocess(
    emptyAsUndefined,
    z
      .enum(['none', 'searxng', 'tavily', 'brave'], {
        message: 'accepts none, searxng, tavily or brave',
      })
      .default('none'),
  ),
  SEARXNG_URL: url(/^https?:$/, 'an http:// or https:// URL'),
  TAVILY_API_KEY: text(),
  TAVILY_BASE_URL: httpUrlOr('https://api.tavily.com'),
  BRAVE_API_KEY: text(),
  BRAVE_BASE_URL: httpUrlOr('https://api.search.brave.com'),
  /** Results handed to the model per search, and the characters of each snippet. */
  WEB_SEARCH_MAX_RESULTS: integer(5, 1, 20),
  WEB_SEARCH_SNIPPET_CHARS: integer(300, 50, 2_000),
  WEB_SEARCH_TIMEOUT_MS: integer(10_000, 100, 120_000),

  // Vision (tools issue): VISION_ENABLED, VISION_MODEL_ID, VISION_MAX_TOKENS are above
  VISION_BASE_URL: url(/^https?:$/, 'an http:// or https:// URL'),
  VISION_API_KEY: text(),

  // Knowledge graph (tools issue)
  GRAPH_MAX_TRIPLES: integer(1_000, 1, 100_000),
  GRAPH_PROMPT_MAX_CHARS: integer(2_000, GRAPH_PROMPT_MIN_CHARS, 100_000),

  // Tracing
  LANGSMITH_API_KEY: text(),
  LANGSMITH_ENDPOINT: url(/^https?:$/, 'an http:// or https:// URL'),
  LANGSMITH_PROJECT: textOr('parley'),
  /**
   * First delay before feedback that LangSmith refused is sent again; doubles up to 1 h. The
   * job engine counts whole seconds: rounded up, 1 s at the least.
   */
  FEEDBACK_RETRY_MS: integer(5_000, 10, 3_600_000),

  // Documents: chunking, embeddings, retrieval
  /** `local` (transformers.js, in-process), `openai` (any /v1/embeddings) or `none` (lexical only). */
  EMBEDDINGS_PROVIDER: z.preprocess(
    emptyAsUndefined,
    z
      .enum(['local', 'openai', 'none'], { message: 'accepts local, openai or none' })
      .default('local'),
  ),
  EMBEDDINGS_BASE_URL: url(/^https?:$/, 'an http:// or https:// URL'),
  EMBEDDINGS_API_KEY: text(),
  /** Model name; default Xenova/multilingual-e5-small (local) or text-embedding-3-small. */
  EMBEDDINGS_MODEL: text(),
  /** Where the `local` model is downloaded from (a Hugging Face-compatible hub or mirror). */
  EMBEDDINGS_MODEL_HOST: url(/^https?:$/, 'an http:// or https:// URL'),
  EMBEDDINGS_BATCH_SIZE: integer(32, 1, 2048),
  /** Retries of an embeddings request that failed (429, 5xx, refused). */
  EMBEDDINGS_MAX_RETRIES: integer(3, 0, 10),
  /** Longest one call of the embeddings server may take, its answer read whole, retries included. */
  EMBEDDINGS_TIMEOUT_MS: integer(60_000, 100, 3_600_000),
  /** After the embedding model could not be had or failed, how long before trying again. */
  EMBEDDINGS_RETRY_MS: integer(600_000, 100, 86_400_000),
  /** Largest chunk, in estimated tokens (see the README for why this default). */
  CHUNK_MAX_TOKENS: integer(256, 32, 8192),
  /** Tokens of a chunk repeated at the start of the next one. */
  CHUNK_OVERLAP_TOKENS: integer(32, 0, 4096),
  /**
   * The vector scores' share of the fused score when hybrid search combines them with BM25's
   * (normalised scores, convex combination; README); 0 keeps search lexical, 1 vectors only.
   */
  HYBRID_VECTOR_WEIGHT: decimal(0.5, 0, 1),
  /** Chunks `search_documents` returns. */
  SEARCH_TOP_K: integer(5, 1, 50),
  // Document ingestion (POST /ingest): extraction runs in a child process under these limits.
  /** Longest the text extraction (OCR included) of one upload may take. */
  INGEST_TIMEOUT_MS: integer(600_000, 1_000, 86_400_000),
  /** Resident memory one extraction process may use (its V8 heap is capped at the same). */
  INGEST_MEMORY_MB: integer(1_536, 64, 65_536),
  /**
   * How long an extraction process waits for the next upload before it exits (0: a new
   * process per upload). Warm, it reads a PDF about twice as fast.
   */
  INGEST_PROCESS_IDLE_MS: integer(60_000, 0, 3_600_000),
  /** Extractions running at once; further uploads wait their turn. */
  INGEST_CONCURRENCY: integer(2, 1, 64),
  /**
   * Uploads that may wait for an extraction slot, each holding a request, a connection and its
   * file; the next is answered 503 `busy` with Retry-After (0: none waits).
   */
  INGEST_QUEUE_MAX: integer(32, 0, 10_000),
  /** Read scanned PDF pages with Tesseract (tesseract.js, English and Korean). */
  OCR_ENABLED: flag(true),
  // Reminders and Telegram
  /** Timezone of users whose profile names none. */
  DEFAULT_TIMEZONE: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine(isTimezone, { message: 'accepts an IANA timezone name such as UTC or Asia/Seoul' })
      .transform(usualTimezoneSpelling)
      .default('UTC'),
  ),
  REMINDER_INTERVAL_SECONDS: integer(60, 1, 3_600),
  REMINDERS_PER_USER: integer(1_000, 1, 100_000),
  TELEGRAM_BOT_TOKEN: text(),
  TELEGRAM_API_BASE: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), {
        message: 'accepts an http:// or https:// URL',
      })
      .default('https://api.telegram.org'),
  ),
  TELEGRAM_DEFAULT_CHAT_ID: text(),
  TELEGRAM_POLLING: flag(false),
  /** How long one getUpdates waits on Telegram's side for a message. */
  TELEGRAM_POLL_TIMEOUT_SECONDS: integer(25, 0, 50),
  /** The most a Bot API call that must arrive (an answer, a reply) may take, its answer read. */
  TELEGRAM_CALL_TIMEOUT_MS: integer(30_000, 1_000, 600_000),
  /** The most one file download from Telegram may take. */
  TELEGRAM_DOWNLOAD_TIMEOUT_MS: integer(120_000, 1_000, 3_600_000),
  TELEGRAM_BOT_USERNAME: text(),
  /**
   * Webhook mode (replicas behind a load balancer): the public https URL of this service's
   * `/telegram/webhook`. Parley calls setWebhook with it at start; polling is then off.
   */
  TELEGRAM_WEBHOOK_URL: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), {
        message: 'accepts an http:// or https:// URL',
      })
      .optional(),
  ),
  /** The webhook's X-Telegram-Bot-Api-Secret-Token; default: derived from the bot token. */
  TELEGRAM_WEBHOOK_SECRET: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      // Telegram accepts 1-256 of these; fewer than 32 could be guessed, and a guessed secret
      // lets anyone speak as any linked chat.
      .regex(/^[A-Za-z0-9_-]{32,256}$/, { message: 'accepts 32-256 of A-Z, a-z, 0-9, _ and -' })
      .optional(),
  ),
  /** Least time between two updates of an answer growing in a chat (Telegram: ~1/s). */
  TELEGRAM_STREAM_INTERVAL_MS: integer(1_000, 50, 10_000),
  // Parley as an MCP server (`/mcp`, docs/mcp.md)
  /**
   * Origins (`https://host[:port]`, comma-separated) whose requests `/mcp` takes: a request that
   * carries any other `Origin` is refused (DNS rebinding). Requests without one (MCP clients
   * that are not browsers) are unaffected. Unset: none.
   */
  MCP_ALLOWED_ORIGINS: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .transform((raw, ctx) => {
        const origins = raw.split(',').map((entry) => entry.trim());
        const bad = origins.find((entry) => !isOrigin(entry));
        if (bad === undefined) return origins;
        ctx.addIssue({
          code: 'custom',
          message: `${JSON.stringify(bad)} is not an origin: scheme://host[:port], no path`,
        });
        return z.NEVER;
      })
      .optional(),
  ),
  // Automations (docs/automations.md)
  /** Automations a user may have at once. */
  AUTOMATIONS_PER_USER: integer(10, 0, 1_000),
  /** Shortest time between two runs of an `every N hours` automation. */
  AUTOMATION_MIN_INTERVAL_MINUTES: integer(60, 1, 1_440),
  /** Settled runs kept per automation, newest first; older ones are deleted. */
  AUTOMATION_RUNS_KEPT: integer(100, 1, 10_000),
  // MCP servers as tools (issue 33; the servers themselves are added through /admin/mcp-servers)
  /** AES-256-GCM key for users' MCP credentials: 64 hex digits or base64 of 32 bytes. */
  MCP_CREDENTIALS_KEY: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine((value) => parseCredentialsKey(value) !== undefined, {
        message: 'accepts 32 bytes as 64 hex digits or base64 (e.g. `openssl rand -base64 32`)',
      })
      .optional(),
  ),
  MCP_CALL_TIMEOUT_MS: integer(30_000, 100, 3_600_000),
  MCP_CALL_MAX_MS: integer(300_000, 100, 3_600_000),
  MCP_RESULT_MAX_CHARS: integer(20_000, 100, 10_000_000),
  MCP_CALLS_PER_ANSWER: integer(10, 0, 1_000),
  MCP_DESCRIPTION_MAX_CHARS: integer(1_000, 50, 100_000),
  // Parley's own tools are at most 11: 100 keeps a chat within providers' 128 tools.
  MCP_MAX_TOOLS: integer(100, 0, 10_000),
  MCP_TOOL_SCHEMA_MAX_CHARS: integer(20_000, 100, 10_000_000),
  MCP_APPROVAL_TIMEOUT_SECONDS: integer(300, 1, 86_400),
  MCP_CONNECT_TIMEOUT_MS: integer(15_000, 100, 600_000),
  MCP_IDLE_SECONDS: integer(600, 1, 86_400),
  /** FOR TESTS ONLY: a file holding the current instant (see src/reminders/clock.ts). */
  PARLEY_TEST_CLOCK_FILE: text(),
});

function isSharedBuffersSize(value: string): boolean {
  const bytes = sizeBytes(value);
  return bytes !== undefined && bytes >= 128 * 1024 && bytes <= 1024 * 1024 * 1024;
}

/** Whether a value is exactly an http(s) origin, as browsers send it in `Origin`. */
function isOrigin(value: string): boolean {
  return (
    URL.canParse(value) &&
    /^https?:$/.test(new URL(value).protocol) &&
    new URL(value).origin === value
  );
}

function isTimezone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

export type Config = Readonly<z.infer<typeof configSchema>>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * How many processes serve the port: PARLEY_WORKERS resolved (`auto` = the cores this process
 * may use). Several need a PostgreSQL server: one process owns the embedded data directory.
 */
export function workerCount(
  config: Pick<Config, 'PARLEY_WORKERS' | 'DATABASE_URL'>,
  cores: number,
): number {
  const count = config.PARLEY_WORKERS === 'auto' ? cores : config.PARLEY_WORKERS;
  if (count > 1 && !config.DATABASE_URL) {
    throw new ConfigError(
      `PARLEY_WORKERS=${config.PARLEY_WORKERS} needs DATABASE_URL: the embedded database ` +
        'belongs to one process; set DATABASE_URL to a PostgreSQL server, or PARLEY_WORKERS=1',
    );
  }
  return count;
}

/**
 * Protected mode: without API_TOKEN every request is the administrator's, so serving any
 * address but loopback would hand the service to whoever can reach the machine. Refused at
 * start, saying why and what to do, unless PROTECTED_MODE=false says the operator means it.
 */
export function assertProtected(
  config: Pick<Config, 'HOST' | 'API_TOKEN' | 'PROTECTED_MODE'>,
): void {
  if (config.API_TOKEN || !config.PROTECTED_MODE || isLoopbackHost(config.HOST)) return;
  throw new ConfigError(
    `HOST=${config.HOST} serves other machines, and without API_TOKEN anyone who reaches it ` +
      'is the administrator (every user, key and document). Set API_TOKEN to a long random ' +
      'secret, serve 127.0.0.1 behind a proxy that authenticates, or set PROTECTED_MODE=false ' +
      'if this network is trusted.',
  );
}

export function isLoopbackHost(host: string): boolean {
  return (
    host === 'localhost' ||
    host === '::1' ||
    host.startsWith('127.') ||
    host.toLowerCase().startsWith('::ffff:127.')
  );
}

/**
 * Reads `.env` (or the file named by ENV_FILE) under the process environment, which wins.
 * A missing `.env` is normal; a missing ENV_FILE is a mistake that stops the start: ignoring
 * it would also ignore the API_TOKEN it holds, and Parley would serve without authentication.
 */
export function readEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): Record<string, string | undefined> {
  const named = env.ENV_FILE?.trim() ? env.ENV_FILE : undefined;
  const file = resolve(cwd, named ?? '.env');
  if (!named && !existsSync(file)) return { ...env };
  let contents: string;
  try {
    contents = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'there is no such file'
        : code === 'EACCES' || code === 'EPERM'
          ? 'permission denied'
          : code === 'EISDIR'
            ? 'it is a directory'
            : `it cannot be read (${code})`;
    throw new ConfigError(
      `${named ? `ENV_FILE=${named}` : file}: ${why}. It holds the settings (API_TOKEN among them): fix it${named ? ', or unset ENV_FILE to read ./.env' : ''}.`,
    );
  }
  return { ...parseEnv(contents), ...env };
}

/** Settings never echoed in an error: secrets, and URLs that may carry a password. */
const SECRET_NAMES = /TOKEN|KEY|SECRET|PASSWORD|DATABASE_URL/;
const carriesPassword = (value: string) => URL.canParse(value) && new URL(value).password !== '';

export function parseConfig(env: Record<string, string | undefined>): Config {
  const result = configSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? 'configuration');
      const got = env[name];
      // Secrets are named but never echoed: start-up errors end up in shared logs.
      const shown =
        got === undefined || SECRET_NAMES.test(name) || carriesPassword(got)
          ? ''
          : ` (got ${JSON.stringify(got)})`;
      return `  ${name}: ${issue.message}${shown}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return Object.freeze(result.data);
}

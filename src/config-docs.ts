/**
 * What each setting does, in the words of docs/configuration.md, which `node scripts/config-doc.ts`
 * writes from this and the schema (the default and what a setting accepts come from the schema
 * itself); a test fails when the page is not what the schema says. The type makes every setting
 * of the schema need an entry here. `unset`: what an absent setting means.
 */
import type { configSchema } from './config.ts';

export interface SettingDoc {
  /** What an unset setting means, where the schema has no default value to show. */
  unset?: string;
  doc: string;
}

export const SETTING_DOCS: Record<keyof typeof configSchema.shape, SettingDoc> = {
  HOST: {
    doc: 'Address to listen on (an IPv6 address bare or in brackets, `::1` or `[::1]`). Set `0.0.0.0` to serve other machines, with `API_TOKEN` set: without it Parley refuses to start (protected mode).',
  },
  PORT: { doc: 'Port (0 picks a free one).' },
  LOG_LEVEL: { doc: '`fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`.' },
  API_TOKEN: {
    unset: 'unset',
    doc: "The administrator's bearer token; unset or empty = no authentication (development mode: anyone reaching the port is the administrator).",
  },
  PROTECTED_MODE: {
    doc: 'Refuse to start on an address other than loopback (`127.x`, `::1`, `localhost`) without `API_TOKEN`, since everyone who reached it would be the administrator; the error says why. `false` serves it anyway (a trusted network), with a warning in the log.',
  },
  WEB_SESSION_HOURS: {
    doc: 'How long a web client sign-in lasts (it ends sooner when its key expires or is revoked).',
  },
  SHUTDOWN_GRACE_MS: {
    doc: 'How long open streams and background jobs under way may finish after SIGTERM.',
  },
  REQUEST_TIMEOUT_MS: {
    doc: "Longest a client may take to send a whole request, an upload included; then 408 and the connection is closed (a stalled upload's partial file is removed). Streamed answers are not limited by it.",
  },
  TRUST_PROXY: {
    unset: 'unset',
    doc: "The reverse proxies whose `X-Forwarded-For` and `X-Forwarded-Proto` Parley believes: a hop count (`1` = the nearest one), or a comma list of addresses, ranges (`10.0.0.0/8` or `10.0.0.0/255.0.0.0`) and `loopback`, `linklocal`, `uniquelocal` (what Fastify's `trustProxy` accepts; anything else stops the start with an error naming `TRUST_PROXY`). Used for the client's address (the sign-in and bearer throttles, logs; an IPv6 client counts as its /64). Unset: the connection's own address, so a client cannot choose the address it is counted under. Prefer a hop count: a range trusts every address in it, so a client inside the range (a LAN, a VPN) can name any address it likes in `X-Forwarded-For`. A hop count believes whatever reaches Parley directly, so Parley must then be reachable only through that proxy (the compose file publishes no port of Parley's).",
  },
  PARLEY_WORKERS: {
    doc: "Server processes sharing the port (node:cluster): a number (1–256) or `auto` (one per core: Node's `os.availableParallelism()`; under a container CPU limit, set a number). More than one needs `DATABASE_URL`; with the embedded engine Parley refuses to start and says so. A worker that dies is replaced (at once, then after 1 s, 2 s … up to 30 s while workers keep dying within 30 s of starting; a database server that is down is waited for so). A worker that cannot start for a reason every worker would meet (the port in use, a `DATA_DIR` or database that cannot be used, `DATABASE_URL` refused) stops them all: Parley exits 1 with that reason.",
  },
  LIMIT_CHATS_PER_MINUTE: {
    doc: 'Chats a user may start in any minute, over every door; `0` = no limit. Per-user overrides: `PATCH /admin/users/{user_id}`.',
  },
  LIMIT_TOKENS_PER_DAY: {
    doc: 'Model input + output tokens a user may use per day of their timezone; `0` = no limit.',
  },
  LIMIT_INGEST_MB_PER_DAY: {
    doc: 'Megabytes a user may upload to `/ingest` per day of their timezone; `0` = no limit.',
  },
  LIMIT_STORAGE_MB: {
    doc: 'Megabytes of private documents and conversations (every version) a user may keep; `0` = no limit.',
  },
  LIMITS_APPLY_TO_ADMIN: {
    doc: "Also refuse requests made with `API_TOKEN` over the named user's limits. Off, a trusted server in front holding the token works exactly as before (its requests still count for the user named).",
  },
  METRICS_ENABLED: {
    doc: 'Serve `GET /metrics` (Prometheus text format); otherwise it answers 404.',
  },
  METRICS_TOKEN: {
    unset: 'unset',
    doc: 'Bearer token for `/metrics` instead of `API_TOKEN` (which `/metrics` then refuses); this token opens nothing else. Unset: `/metrics` takes the API token like any route.',
  },
  DATA_DIR: {
    doc: 'The embedded database (`pg`), downloaded models (`models`), uploads being extracted and backups being sent. With `DATABASE_URL` only the models and uploads, per process.',
  },
  DATABASE_URL: {
    unset: 'unset',
    doc: '`postgres://…` to use a PostgreSQL server instead of the embedded one.',
  },
  DB_POOL_MAX: {
    doc: 'Connections to a PostgreSQL server (the embedded engine has one). Under load a query waits up to `DB_POOL_WAIT_MS` for a free one rather than failing; a server that takes more than 5 s to accept a new connection counts as unavailable (503 / `database_unavailable`).',
  },
  DB_POOL_WAIT_MS: {
    doc: 'The longest a query waits for a free pooled connection (both engines). Past it the request gets 503 `busy` with `Retry-After: 5`: Parley is busy, the database is fine. Also bounds opening a connection, with the 5 s above on a PostgreSQL server. 100–600000.',
  },
  DB_REPLY_TIMEOUT_MS: {
    doc: 'With `DATABASE_URL`: the longest a query waits while the server sends nothing back. After a failover or a network partition the old connections are neither answered nor closed; past this one is given up (that request gets 503 `database_unavailable`) and the next query opens a new connection, so Parley recovers on its own. The connection on which a replica hears of resumable answers generated on the others is asked a trivial query every 5 s and given up the same way: a replica cut off in silence listens again within 5 s plus this (meanwhile it shows those answers once a second, not as they come). Migrations and replicas waiting their turn to start are not bound by it. 1000–3600000.',
  },
  CHAT_TURN_TTL_SECONDS: {
    doc: "With `DATABASE_URL`: the longest a replica that died holding a user's chat turn keeps that user waiting (see Running several replicas). 2–300.",
  },
  JOB_LEASE_SECONDS: {
    unset: "(each kind's: 300 for feedback, 600 for embeddings, 120 for the others)",
    doc: "How long a process that died holding a background job delays it: the job's heartbeat (a live process keeps beating however long the job takes), and a reminder notice's claim on its row (see Background jobs). A notice's send may take at most half of it. 10–3600. Not for automations' runs: their claim lasts twice a chat's time limit.",
  },
  EMBEDDED_DB_SHARED_BUFFERS: {
    doc: "Postgres `shared_buffers` of the embedded engine: memory it keeps for good (the OS still caches the files). `auto` sizes it at each start to hold the vector indexes (HNSW) with a quarter more: 16MB while they are smaller than ~13 MB (about 6,000 chunks of 384-dimension vectors), at most an eighth of the machine's memory and 1GB; the `database ready` log line says what it chose and why (`sharedBuffers`, `vectorIndexBytes`). A store above the floor opens its database twice at start, the first time only to measure. At 100k chunks (a ~200 MB index) this made vector search about 3 times as fast and hybrid search's p50 43–49 → 23–24 ms, p99 60–74 → 35–56 ms (bench/RESULTS.md). A size (`16MB`, `512kB`, `1GB`) is used as given.",
  },
  MESSAGE_MAX_CHARS: {
    doc: 'Longest chat message, in characters as a person counts them (an emoji is one), on every door alike.',
  },
  INGEST_MAX_BYTES: { doc: 'Largest upload to `/ingest`; more is answered 413.' },
  IMAGE_MAX_BYTES: { doc: 'Largest image in a chat (decoded).' },
  LLM_BASE_URL: {
    unset: 'unset',
    doc: 'OpenAI-compatible server, e.g. `http://127.0.0.1:11434/v1`. No event of its answers is read past 4 MiB (a real one is a few kB; a non-streamed answer counts as one event): one that goes on without ending (a broken proxy, garbage without newlines) ends the answer with `model_bad_response`, kept as far as it went, as a broken connection does, and `model_event_too_large` in the log.',
  },
  LLM_API_KEY: { unset: 'unset', doc: 'Its API key, if it needs one.' },
  LLM_MODEL: {
    unset: '`default` / the default GGUF',
    doc: 'Model name sent to that server; without `LLM_BASE_URL`, the GGUF to download (`hf:owner/repo:QUANT` or an `https://` URL, a presigned one too: its query, user and password are never shown in the log, `/health` or chat errors), default `hf:unsloth/Qwen3.5-4B-GGUF:Q4_K_M`.',
  },
  LLM_MODEL_PATH: { unset: 'unset', doc: 'A local GGUF for the embedded model (no download).' },
  LLM_THREADS: {
    unset: "llama.cpp's",
    doc: 'CPU threads of the embedded model; `1` is much faster on a busy shared machine.',
  },
  LLM_CHUNK_TIMEOUT_MS: {
    doc: 'A model call is abandoned when the first token, or any next one, takes longer. The first is counted from the request (a server that never answers, not even with headers, is timed out too); the wait before a retry is not counted.',
  },
  LLM_MAX_RETRIES: {
    doc: 'Retries of a model call that failed before streaming (429, 5xx, refused).',
  },
  TOOL_TIMEOUT_MS: { doc: 'Longest a tool may run.' },
  CHAT_MAX_STEPS: {
    doc: "Model calls per chat (the tool loop's limit); the last one is asked to answer without calling tools.",
  },
  HISTORY_MAX_TOKENS: { doc: 'History budget per chat (see above).' },
  SSE_KEEPALIVE_MS: { doc: 'Silence before a `: ping` keep-alive.' },
  ANSWER_MAX_SECONDS: {
    doc: 'The longest a resumable answer (`"resumable": true` on `POST /chat`, the web client, Telegram) may take, whether anyone listens or not; it is then stopped with an `answer_timeout` error and kept as far as it went. 10–86400.',
  },
  RUN_EVENTS_KEEP_HOURS: {
    doc: 'How long after a resumable answer ended its events can still be replayed (`GET /users/{user_id}/runs/{run_id}/events`); older ones are pruned every hour (see Resumable answers in the REST API page). 1–8760.',
  },
  GRAPH_ENABLED: {
    doc: 'Knowledge graph: `add_relation`, `query_entity` and a summary in every prompt (see Tools).',
  },
  CONVERSATION_TITLES: {
    doc: "`model`: after a conversation's first answer, the chat model writes its title in the background; `question`: the question's first words stay (no model call).",
  },
  CONVERSATIONS_PER_USER: {
    doc: "How many conversations a user may keep: a new one beyond it (the web client's \"New conversation\", `POST /users/{user_id}/conversations`, Telegram's `/new`, an automation's own) is refused (a 422 whose `detail` says why) until the user deletes some. Empty conversations weigh nothing against `storage_mb`, so this is what bounds their number.",
  },
  CONV_RAG_ENABLED: {
    doc: "After each answer, the model decides in the background whether to remember the exchange; memories are found by that user's `search_documents` (see Tools).",
  },
  MEMORY_RETRY_MS: {
    doc: 'First delay before a failed memory decision is tried again; doubles, and the decision is given up after its 5th failure. Whole seconds, 1000–3600000.',
  },
  CRAG_ENABLED: {
    doc: 'When `search_documents` finds nothing, run one web search for the same query in that step (needs `WEB_SEARCH_PROVIDER`).',
  },
  VISION_ENABLED: {
    doc: 'Image understanding: `image_base64` accepted, `analyze_image` offered with it.',
  },
  VISION_MODEL_ID: {
    unset: 'unset',
    doc: 'Vision model name at `VISION_BASE_URL` (required for images).',
  },
  VISION_MAX_TOKENS: { doc: 'Longest vision answer (`max_tokens`).' },
  QUERY_REWRITE_ENABLED: {
    doc: "Before `search_documents` searches, the chat model rewrites the query into a standalone one using the conversation (one extra model call; not on a conversation's first message).",
  },
  RAG_VERBOSE: {
    doc: "Log document searches: the query, its rewrite, and each hit's source, page, score and first 200 characters.",
  },
  RAG_SHOW_SOURCES: {
    doc: 'End an answer that used `search_documents` with a short sources list (source and page), streamed as ordinary text fragments.',
  },
  LANGGRAPH_VERBOSE: {
    doc: "Log every step of the agent loop: its finish reason and the tools it called, and each tool's end (its name, and a failed call's error text, which can quote the call's arguments).",
  },
  THINK_VERBOSE: { doc: "Log the model's reasoning." },
  WEB_SEARCH_PROVIDER: { doc: '`searxng`, `tavily`, `brave`, or `none` (no `web_search` tool).' },
  SEARXNG_URL: {
    unset: 'unset',
    doc: 'SearXNG instance, e.g. `http://127.0.0.1:8888` (its `search.formats` must include `json`). Required for `searxng`.',
  },
  TAVILY_API_KEY: { unset: 'unset', doc: 'Required for `tavily`.' },
  TAVILY_BASE_URL: { doc: 'Tavily API (or a compatible proxy).' },
  BRAVE_API_KEY: { unset: 'unset', doc: 'Brave Search subscription token. Required for `brave`.' },
  BRAVE_BASE_URL: { doc: 'Brave Search API (or a compatible proxy).' },
  WEB_SEARCH_MAX_RESULTS: { doc: 'Results handed to the model per search (1–20).' },
  WEB_SEARCH_SNIPPET_CHARS: { doc: 'Longest snippet per result (titles: 200).' },
  WEB_SEARCH_TIMEOUT_MS: { doc: 'A search taking longer is abandoned; the model is told.' },
  VISION_BASE_URL: { doc: 'OpenAI-compatible server of the vision model.' },
  VISION_API_KEY: {
    unset: 'unset',
    doc: 'Its key (with `VISION_BASE_URL` unset, `LLM_API_KEY` is used).',
  },
  GRAPH_MAX_TRIPLES: { doc: 'Relations kept per user; `add_relation` refuses more.' },
  GRAPH_PROMPT_MAX_CHARS: {
    doc:
      'Longest graph summary in the system prompt, its header and "N more" line included ' +
      '(these take about 170 characters).',
  },
  LANGSMITH_API_KEY: {
    unset: 'unset',
    doc: 'Enables tracing and feedback forwarding to LangSmith.',
  },
  LANGSMITH_ENDPOINT: { unset: "LangSmith's", doc: 'Another LangSmith-compatible endpoint.' },
  LANGSMITH_PROJECT: { doc: 'Project the traces go to.' },
  FEEDBACK_RETRY_MS: {
    doc: 'First delay before retrying feedback LangSmith refused; doubles up to 1 h. Whole seconds, rounded up.',
  },
  EMBEDDINGS_PROVIDER: {
    doc: '`local` (a sentence-embedding model run in-process), `openai` (any OpenAI-compatible `/v1/embeddings`) or `none` (lexical retrieval only).',
  },
  EMBEDDINGS_BASE_URL: {
    unset: 'unset',
    doc: 'For `openai`: the server, e.g. `http://127.0.0.1:11434/v1` (required).',
  },
  EMBEDDINGS_API_KEY: { unset: 'unset', doc: 'For `openai`: its API key, if it needs one.' },
  EMBEDDINGS_MODEL: {
    doc: 'The model: a Hugging Face id with ONNX weights for `local` (downloaded into `DATA_DIR/models`), the model name for `openai`.',
  },
  EMBEDDINGS_MODEL_HOST: {
    unset: 'the Hugging Face Hub',
    doc: 'For `local`: where the model is downloaded from (a mirror, or a hub of your own with the same layout).',
  },
  EMBEDDINGS_BATCH_SIZE: {
    doc: 'Texts per embeddings request (or per forward pass of the local model).',
  },
  EMBEDDINGS_MAX_RETRIES: {
    doc: 'Retries of an embeddings request that failed (429, 5xx, refused), with backoff.',
  },
  EMBEDDINGS_TIMEOUT_MS: {
    doc: 'Longest one call of the embeddings server (`EMBEDDINGS_PROVIDER=openai`) may take, its answer read whole and its retries included: a server that stalls mid-answer fails the batch, which is tried again after `EMBEDDINGS_RETRY_MS` (a query is then searched by its words).',
  },
  EMBEDDINGS_RETRY_MS: {
    doc: 'After the embedding model could not be had (offline) or a batch failed, how long before trying again.',
  },
  CHUNK_MAX_TOKENS: { doc: 'Largest chunk, in estimated tokens (see why).' },
  CHUNK_OVERLAP_TOKENS: {
    doc: "Tokens of a chunk's last sentences repeated at the start of the next.",
  },
  HYBRID_VECTOR_WEIGHT: {
    doc: "The vector scores' share of the fused score, BM25's being the rest (0–1; 0 keeps search lexical, 1 vectors only). See why.",
  },
  SEARCH_TOP_K: { doc: 'Passages `search_documents` returns.' },
  INGEST_TIMEOUT_MS: { doc: "Longest one upload's extraction (OCR included) may take; then 422." },
  INGEST_MEMORY_MB: { doc: 'Resident memory of one extraction process; above it, 422.' },
  INGEST_PROCESS_IDLE_MS: {
    doc: 'How long an extraction process waits for the next upload before it exits; `0` starts one per upload.',
  },
  INGEST_CONCURRENCY: {
    doc: 'Uploads extracted at once, and uploads stored at once; more wait their turn.',
  },
  INGEST_QUEUE_MAX: {
    doc: 'Uploads that may wait for their extraction (each holds a connection and its file on disk); the next gets 503 `busy` with `Retry-After: 30`. `0`: none waits.',
  },
  OCR_ENABLED: { doc: 'Read scanned PDF pages with Tesseract (English, Korean).' },
  DEFAULT_TIMEZONE: {
    doc: 'Timezone (IANA) of users whose profile names none: their "today", their reminders\' days.',
  },
  REMINDER_INTERVAL_SECONDS: {
    doc: 'How often the reminder scheduler wakes (1–3600); automations are looked at as often.',
  },
  REMINDERS_PER_USER: {
    doc: 'How many reminders a user may have at once, past ones included until deleted (1–100000); one more is refused (422) until they delete some.',
  },
  TELEGRAM_BOT_TOKEN: {
    unset: 'unset',
    doc: "The bot's token from @BotFather. Unset: the scheduler does not run and Parley says so at start; once it is set, the catch-up rule of Reminders and Telegram applies.",
  },
  TELEGRAM_API_BASE: { doc: 'Bot API address (a local Bot API server, or a test fake).' },
  TELEGRAM_DEFAULT_CHAT_ID: {
    unset: 'unset',
    doc: 'Chat for users who linked none (single-user installs).',
  },
  TELEGRAM_POLLING: {
    doc: "Read the bot's messages (`getUpdates` long polling): linking with `/start <code>` and chatting. One replica polls at a time. Ignored when `TELEGRAM_WEBHOOK_URL` is set.",
  },
  TELEGRAM_POLL_TIMEOUT_SECONDS: {
    doc: "How long one `getUpdates` waits on Telegram's side. The polling replica's lease lasts this plus 30 s, so when the polling replica dies another takes over once that has run out (55 s by default).",
  },
  TELEGRAM_CALL_TIMEOUT_MS: {
    doc: "How long a Bot API call that must arrive (a final answer, a reply, a file's details) may take, its answer read, before it counts as failed and is tried again. A `sendMessage` whose 200 came but whose answer stalled past this counts as sent: Telegram carried it out, and sending it again would show the user the answer twice.",
  },
  TELEGRAM_DOWNLOAD_TIMEOUT_MS: {
    doc: 'How long one download of a file a user sent (a document, a photo) may take before the user is told it failed and can send it again.',
  },
  TELEGRAM_BOT_USERNAME: {
    unset: 'unset',
    doc: "The bot's @name without `@`, for the `t.me` deep link in `POST /users/{user_id}/telegram-link`.",
  },
  TELEGRAM_WEBHOOK_URL: {
    unset: 'unset',
    doc: 'Webhook mode (replicas behind a load balancer): the public URL of `/telegram/webhook`; every replica calls `setWebhook` with it at start.',
  },
  TELEGRAM_WEBHOOK_SECRET: {
    unset: 'derived from the token',
    doc: "The webhook's `X-Telegram-Bot-Api-Secret-Token` (32–256 of `A-Z a-z 0-9 _ -`: a shorter one could be guessed, and it lets whoever has it speak as any linked chat; wrong ones count in the bearer throttle).",
  },
  TELEGRAM_STREAM_INTERVAL_MS: {
    doc: 'Least time between two updates (draft or edit) of an answer growing in a chat; Telegram allows about one a second.',
  },
  MCP_ALLOWED_ORIGINS: {
    unset: 'none',
    doc: 'Origins (`https://host[:port]`, comma-separated, exactly as a browser sends them) whose requests `/mcp` accepts when they carry an `Origin` header; any other `Origin` is refused with 403 (DNS rebinding protection, as the MCP specification asks). Requests without `Origin` (desktop and command-line MCP clients) are not affected. Parley sends no CORS headers, so this admits a page or app of that origin only when it can make the request at all. See [docs/mcp.md](mcp.md).',
  },
  AUTOMATIONS_PER_USER: {
    doc: 'How many automations (prompts on a schedule) a user may have at once; 0 turns them off for everyone.',
  },
  AUTOMATION_MIN_INTERVAL_MINUTES: {
    doc: 'The shortest interval of an "every N hours" automation, in minutes (at most a day). See docs/automations.md.',
  },
  AUTOMATION_RUNS_KEPT: {
    doc: "How many finished runs of each automation are kept (the newest; `GET …/runs` shows up to 100 of them); older ones are deleted as new ones finish, so an automation that runs every hour does not grow its history for ever. A run's answer stays in the automation's conversation. 1–10000.",
  },
  MCP_CREDENTIALS_KEY: {
    unset: 'unset (users cannot store credentials)',
    doc: "Key that encrypts users' own credentials for MCP servers at rest (AES-256-GCM): 32 bytes as 64 hex digits or base64 (`openssl rand -base64 32`). Keep it out of backups of the database; losing it loses the stored credentials, not the servers.",
  },
  MCP_CALL_TIMEOUT_MS: {
    doc: 'Longest an MCP tool call may go without an answer; each progress notification of the server starts it again, up to `MCP_CALL_MAX_MS`.',
  },
  MCP_CALL_MAX_MS: { doc: 'Longest an MCP tool call may take, progress or not.' },
  MCP_RESULT_MAX_CHARS: {
    doc: 'Characters of one MCP tool result the model sees; a longer one is cut and the model is told so.',
  },
  MCP_CALLS_PER_ANSWER: {
    doc: 'MCP tool calls one answer may make; later calls are refused with a result saying so.',
  },
  MCP_DESCRIPTION_MAX_CHARS: {
    doc: "Characters of an MCP tool's description passed to the model (descriptions are the server's text, untrusted).",
  },
  MCP_MAX_TOOLS: {
    doc: "MCP tools one chat offers the model, over all the user's servers, shared fairly: the places are dealt round-robin, one to each server in turn (servers by name), so each server gets an even share (the first by name one more when it does not divide) and a share a server cannot use goes to the others; each server offers its tools by name up to its share (the rest are left out and named in `GET /users/{user_id}/mcp-servers`). With Parley's own tools (at most 11), the default stays within the 128 tools OpenAI takes in a request.",
  },
  MCP_TOOL_SCHEMA_MAX_CHARS: {
    doc: "Longest input schema (its JSON's characters) of an MCP tool offered to the model: a tool with a longer one is left out (and named in the server's status), not sent with every chat.",
  },
  MCP_APPROVAL_TIMEOUT_SECONDS: {
    doc: 'How long a tool call waits for its user to approve it; then it is not approved.',
  },
  MCP_CONNECT_TIMEOUT_MS: {
    doc: 'Longest to start or reach an MCP server and list its tools before a chat goes on without it.',
  },
  MCP_IDLE_SECONDS: {
    doc: "A user's connection to an MCP server (a stdio server's process) unused this long is closed.",
  },
  PARLEY_TEST_CLOCK_FILE: {
    unset: 'unset',
    doc: '**For tests only.** A file holding an ISO instant that Parley takes as the current time (chat dates, reminders, the scheduler, the day of the daily limits), re-read on every use; the tests rewrite it to move time, and the reminders and automations tick as soon as it changes (besides their interval). Parley warns at start when it is set. Never set it in production.',
  },
};

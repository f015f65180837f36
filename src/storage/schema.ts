import { orm, pgCore } from './orm.ts';

const { sql } = orm;
const {
  bigint,
  bigserial,
  boolean,
  customType,
  date,
  foreignKey,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  real,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} = pgCore;

/**
 * One schema for both engines (PGlite and a PostgreSQL server). Every per-user table carries
 * `user_id` and is indexed by it: repositories always filter on it.
 *
 * Vector columns are not declared here: the PostgreSQL server may lack pgvector, so the
 * documents issue will add them with a guarded migration (0001 only creates the extension
 * where it is available) and read them with explicit SQL.
 */

const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow();

/** Full-text search terms (conversation search); written with the row, never read back. */
const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });

/** The user profile: what the assistant knows about the person, injected into prompts. */
export const users = pgTable('users', {
  userId: text('user_id').primaryKey(),
  displayName: text('display_name'),
  timezone: text('timezone'),
  locale: text('locale'),
  telegramChatId: text('telegram_chat_id'),
  /** SHA-256 of the one-time code the user sends the bot as `/start <code>` (see README). */
  telegramLinkCodeHash: text('telegram_link_code_hash'),
  telegramLinkExpiresAt: timestamp('telegram_link_expires_at', { withTimezone: true }),
  /** Free-form facts the assistant keeps about the user (name, preferences…). */
  facts: jsonb('facts').$type<Record<string, string>>().notNull().default({}),
  createdAt: createdAt(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

/**
 * A user's conversation: its turns are `messages` rows. `leaf_run_id` is the turn being
 * continued (the newest of the active path; null before the first). The title is the
 * question's first words until the model writes one (`title_source` 'model') or the user
 * renames it ('user'), which nothing overwrites.
 */
export const conversations = pgTable(
  'conversations',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id').notNull(),
    title: text('title').notNull().default(''),
    titleSource: text('title_source')
      .$type<'question' | 'model' | 'user'>()
      .notNull()
      .default('question'),
    pinned: boolean('pinned').notNull().default(false),
    createdAt: createdAt(),
    /** The newest activity: the last turn stored (renaming or pinning is not activity). */
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    leafRunId: uuid('leaf_run_id'),
    /** What its messages take, every version (the user's `storage_mb` counts it). */
    bytes: bigint('bytes', { mode: 'number' }).notNull().default(0),
  },
  (t) => [index('conversations_list_idx').on(t.userId, t.pinned, t.updatedAt, t.id)],
);

/** The conversation a chat without `conversation_id` goes to, per user (web and REST). */
export const currentConversations = pgTable('current_conversations', {
  userId: text('user_id').primaryKey(),
  conversationId: uuid('conversation_id')
    .notNull()
    .references(() => conversations.id, { onDelete: 'cascade' }),
});

/**
 * Conversations waiting for the model to title them, after their first answer (a background
 * job; see src/conversations/title-job.ts). Deleted once titled; kept, emptied, when given up.
 */
export const titleRequests = pgTable(
  'title_requests',
  {
    conversationId: uuid('conversation_id')
      .primaryKey()
      .references(() => conversations.id, { onDelete: 'cascade' }),
    userId: text('user_id').notNull(),
    attempts: integer('attempts').notNull().default(0),
    createdAt: createdAt(),
    failedAt: timestamp('failed_at', { withTimezone: true }),
    errorKind: text('error_kind'),
  },
  (t) => [index('title_requests_due_idx').on(t.createdAt).where(sql`${t.failedAt} IS NULL`)],
);

/**
 * Conversation history: one row per model message (AI SDK `ModelMessage` JSON), in `id` order.
 * Reasoning is never stored. `interrupted` marks an answer cut short by a client disconnect.
 *
 * A turn is one run's rows (the question, then its answer). Turns form a tree per
 * conversation: `parent_run_id` is the turn a question followed (null for a first question),
 * so an edited question or a regenerated answer is a sibling of the turn it replaces, and
 * every version stays. `on_path` marks the rows of the active path (the branch being
 * continued), so reading it, a page or the model's history, is one range of one index.
 * `search` is the row's words for the conversations' search: what migration 0012's
 * `parley_search_vector(role, content)` gives, written by the INSERT (RunRepository; every
 * writer must set it, since migration 0016 it is no longer generated).
 */
export const messages = pgTable(
  'messages',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: text('user_id').notNull(),
    runId: uuid('run_id'),
    role: text('role').$type<'user' | 'assistant' | 'tool' | 'system'>().notNull(),
    content: jsonb('content').notNull(),
    interrupted: boolean('interrupted').notNull().default(false),
    createdAt: createdAt(),
    conversationId: uuid('conversation_id').notNull(),
    parentRunId: uuid('parent_run_id'),
    onPath: boolean('on_path').notNull().default(true),
    search: tsvector('search'),
  },
  (t) => [
    index('messages_user_id_idx').on(t.userId, t.id),
    index('messages_conversation_idx').on(t.conversationId, t.id),
    index('messages_path_idx').on(t.conversationId, t.id).where(sql`${t.onPath}`),
    index('messages_run_idx').on(t.runId),
    index('messages_parent_idx').on(t.conversationId, t.parentRunId).where(sql`${t.role} = 'user'`),
    index('messages_search_idx').using('gin', t.search),
    foreignKey({ columns: [t.conversationId], foreignColumns: [conversations.id] }).onDelete(
      'cascade',
    ),
  ],
);

/** A chat run: one `POST /chat`, identified by the `run_id` sent at the end of the stream. */
export const chatRuns = pgTable(
  'chat_runs',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id').notNull(),
    status: text('status')
      .$type<'running' | 'completed' | 'failed' | 'interrupted'>()
      .notNull()
      .default('running'),
    model: text('model'),
    inputTokens: integer('input_tokens'),
    outputTokens: integer('output_tokens'),
    toolsUsed: jsonb('tools_used').$type<string[]>().notNull().default([]),
    errorCode: text('error_code'),
    /** The answer of a run whose conversation the client keeps (OpenAI door); else null. */
    answer: text('answer'),
    /** The conversation the run's turn went to (none for the OpenAI door): its memory's too. */
    conversationId: uuid('conversation_id'),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
  },
  (t) => [index('chat_runs_user_id_idx').on(t.userId, t.startedAt)],
);

/**
 * Feedback on a run. It doubles as the outbox for LangSmith: `forwardedAt` stays null until
 * the tracing service has accepted it, so an outage delays forwarding but loses nothing.
 */
export const feedback = pgTable(
  'feedback',
  {
    id: uuid('id').primaryKey(),
    runId: uuid('run_id')
      .notNull()
      .references(() => chatRuns.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    score: doublePrecision('score').notNull(),
    comment: text('comment'),
    createdAt: createdAt(),
    forwardedAt: timestamp('forwarded_at', { withTimezone: true }),
    forwardAttempts: integer('forward_attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    /** 'api' (POST /feedback: each call adds a rating) or 'telegram' (a button: one per run, changed by pressing again). */
    source: text('source').notNull().default('api'),
    /** Bumped by each change, so a send of an older score is not taken for the latest. */
    revision: integer('revision').notNull().default(0),
    /** LangSmith holds this feedback: a change is sent as an update of it, not a new one. */
    forwardedOnce: boolean('forwarded_once').notNull().default(false),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    /** Set when LangSmith refused it for good (a 4xx): not sent again; see GET /admin/jobs. */
    failedAt: timestamp('failed_at', { withTimezone: true }),
    errorKind: text('error_kind'),
  },
  (t) => [
    index('feedback_run_id_idx').on(t.runId),
    index('feedback_pending_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.forwardedAt} IS NULL AND ${t.failedAt} IS NULL`),
    uniqueIndex('feedback_telegram_run_idx').on(t.runId).where(sql`${t.source} = 'telegram'`),
  ],
);

/** A reminder on a calendar date; notices go out at D-7, D-1 and D-0. */
export const reminders = pgTable(
  'reminders',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id').notNull(),
    title: text('title').notNull(),
    dueOn: date('due_on', { mode: 'string' }).notNull(),
    createdAt: createdAt(),
    /** Local time of day, HH:MM, when the reminder has one. */
    time: text('time'),
    note: text('note'),
    /** The timezone the date was meant in: the user's when it was set. */
    timezone: text('timezone').notNull().default('UTC'),
  },
  (t) => [
    index('reminders_user_id_idx').on(t.userId, t.dueOn),
    index('reminders_due_idx').on(t.dueOn),
  ],
);

/**
 * One row per notice sent. The primary key makes sending idempotent across replicas: a
 * replica claims a notice by inserting its row, and only the one whose insert succeeds sends.
 */
export const reminderNotices = pgTable(
  'reminder_notices',
  {
    reminderId: uuid('reminder_id')
      .notNull()
      .references(() => reminders.id, { onDelete: 'cascade' }),
    daysBefore: integer('days_before').notNull(),
    claimedAt: timestamp('claimed_at', { withTimezone: true }).notNull().defaultNow(),
    sentAt: timestamp('sent_at', { withTimezone: true }),
    /**
     * sending: claimed, its sender owns it until `nextAttemptAt` (then it is sent again);
     * retry: Telegram failed for a while, due again at `nextAttemptAt`; sent; failed
     * (refused for good, e.g. bot blocked); undeliverable (no chat to send to).
     */
    status: text('status')
      .$type<'sending' | 'retry' | 'sent' | 'failed' | 'undeliverable'>()
      .notNull()
      .default('sent'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }),
    lastError: text('last_error'),
    /** When it was settled as failed or undeliverable, and why in a word (GET /admin/jobs). */
    failedAt: timestamp('failed_at', { withTimezone: true }),
    errorKind: text('error_kind'),
  },
  (t) => [primaryKey({ columns: [t.reminderId, t.daysBefore] })],
);

/**
 * Knowledge graph triples (spec §2). Each term is kept as the user wrote it and as a key
 * (trimmed, NFKC, case-folded, spaces collapsed: graph/term-key.ts); a triple is unique per
 * user by its keys, so "Seoul" and " seoul " are stored once. Rows are never updated, so a
 * user's (count, max id) changes with every change: replicas validate their cache with it.
 */
export const graphTriples = pgTable(
  'graph_triples',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: text('user_id').notNull(),
    subject: text('subject').notNull(),
    relation: text('relation').notNull(),
    object: text('object').notNull(),
    subjectKey: text('subject_key').notNull(),
    relationKey: text('relation_key').notNull(),
    objectKey: text('object_key').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('graph_triples_key_idx').on(t.userId, t.subjectKey, t.relationKey, t.objectKey),
    index('graph_triples_user_id_idx').on(t.userId, t.id),
  ],
);

/**
 * An ingested source. `owner` is '' for uploaded documents, shared by all users and listed by
 * `GET /documents`; a user's own rows (conversation memories) carry that user's id, which is
 * never empty, and are visible to that user's searches only. A source is unique per owner.
 */
export const documents = pgTable(
  'documents',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    source: text('source').notNull(),
    kind: text('kind').$type<'document' | 'conversation'>().notNull().default('document'),
    owner: text('owner').notNull().default(''),
    filename: text('filename'),
    contentType: text('content_type'),
    bytes: integer('bytes'),
    chunkCount: integer('chunk_count').notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('documents_owner_source_idx').on(t.owner, t.source),
    index('documents_kind_idx').on(t.kind, t.source),
  ],
);

/** A piece of a source, the unit of retrieval. `owner` repeats its document's. */
export const chunks = pgTable(
  'chunks',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    documentId: bigint('document_id', { mode: 'number' })
      .notNull()
      .references(() => documents.id, { onDelete: 'cascade' }),
    owner: text('owner').notNull().default(''),
    chunkIndex: integer('chunk_index').notNull(),
    content: text('content').notNull(),
    /** sha256 of the content: identical text is embedded once, per embedding model. */
    contentHash: text('content_hash').notNull(),
    page: integer('page'),
    /** Lexical terms in the chunk: its length for BM25. */
    termCount: integer('term_count').notNull(),
    /** Where it came from: pageEnd, start, end (offsets in the page), heading. */
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
  },
  (t) => [
    index('chunks_document_idx').on(t.documentId, t.chunkIndex),
    index('chunks_content_hash_idx').on(t.contentHash),
  ],
);

/**
 * The lexical index: one posting per (chunk, term) with what BM25 needs. The search index is
 * ordered by `impact` (the posting's BM25 term weight when it was written), so a query reads
 * only the strongest postings of a very common term instead of all of them.
 */
export const chunkTerms = pgTable(
  'chunk_terms',
  {
    chunkId: bigint('chunk_id', { mode: 'number' }).notNull(),
    owner: text('owner').notNull(),
    term: text('term').notNull(),
    tf: integer('tf').notNull(),
    length: integer('length').notNull(),
    impact: real('impact').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.chunkId, t.term] }),
    index('chunk_terms_search_idx').on(t.owner, t.term, t.impact.desc(), t.chunkId, t.tf, t.length),
  ],
);

/** Document frequency of each term, per owner, kept in step with `chunk_terms`. */
export const termStats = pgTable(
  'term_stats',
  {
    owner: text('owner').notNull(),
    term: text('term').notNull(),
    df: integer('df').notNull(),
  },
  (t) => [primaryKey({ columns: [t.owner, t.term] })],
);

/** Chunks and total terms per owner: BM25's N and average length. */
export const corpusStats = pgTable('corpus_stats', {
  owner: text('owner').primaryKey(),
  chunks: bigint('chunks', { mode: 'number' }).notNull(),
  terms: bigint('terms', { mode: 'number' }).notNull(),
});

/**
 * A named lease shared by replicas (e.g. the one Telegram poller): whoever holds an unexpired
 * row does the work; `state` carries what the next holder needs (the getUpdates offset).
 */
export const serviceLeases = pgTable('service_leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  state: jsonb('state').$type<Record<string, unknown>>().notNull().default({}),
});

/**
 * Telegram chats that talk to an assistant: a private chat linked with a one-time code (not a
 * `telegram_chat_id` set through the profile, which only says where notices go). One user per
 * chat; `/stop` deletes the row. `hinted_at` is when an unlinked chat was last told how to
 * link (at most once an hour), kept here so that every replica agrees.
 */
export const telegramChats = pgTable(
  'telegram_chats',
  {
    chatId: text('chat_id').primaryKey(),
    userId: text('user_id'),
    /** The chat's own current conversation (`/new`, `/chats`); null: the user's shared one. */
    conversationId: uuid('conversation_id').references(() => conversations.id, {
      onDelete: 'set null',
    }),
    linkedAt: timestamp('linked_at', { withTimezone: true }),
    hintedAt: timestamp('hinted_at', { withTimezone: true }),
  },
  (table) => [index('telegram_chats_user_id_idx').on(table.userId)],
);

/**
 * Telegram updates already taken by a replica, by bot and `update_id`: an update delivered
 * twice (a webhook retried, a poll after a crash before its offset was saved) is handled
 * once. Rows older than a week are deleted (Telegram keeps an update at most 24 hours).
 */
export const telegramUpdates = pgTable(
  'telegram_updates',
  {
    botId: text('bot_id').notNull(),
    updateId: bigint('update_id', { mode: 'number' }).notNull(),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    primaryKey({ columns: [table.botId, table.updateId] }),
    index('telegram_updates_received_at_idx').on(table.receivedAt),
  ],
);

/**
 * CONV_RAG_ENABLED: answered exchanges waiting for the model to decide whether they are worth
 * remembering. Queued in the database, so a restart or a replica's death loses none; a row
 * is leased by moving `next_attempt_at` ahead, and deleted once decided. One per run.
 */
export const memoryDecisions = pgTable(
  'memory_decisions',
  {
    runId: uuid('run_id').primaryKey(),
    userId: text('user_id').notNull(),
    question: text('question').notNull(),
    answer: text('answer').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    createdAt: createdAt(),
    /**
     * Set when the decision was given up (its attempts ran out): the row stays, emptied of
     * the exchange's words, so the administrator sees the failure (GET /admin/jobs).
     */
    failedAt: timestamp('failed_at', { withTimezone: true }),
    errorKind: text('error_kind'),
  },
  (t) => [index('memory_decisions_due_idx').on(t.nextAttemptAt).where(sql`${t.failedAt} IS NULL`)],
);

/**
 * Chats waiting for or holding their user's turn, across replicas (see
 * src/storage/chat-turn-repository.ts). A ticket is taken on arrival, so `id` orders one
 * user's chats as the database saw them arrive; `holder` (the replica) refreshes
 * `heartbeat_at` while it lives, and a ticket not refreshed within the TTL is dead.
 *
 * Both chat-turn tables are UNLOGGED (edited into migration 0006 by hand: Drizzle cannot
 * declare it): a logged write waits for a WAL flush, which made the lock cost ~11 ms per chat
 * here instead of ~1 ms (bench/RESULTS.md). What they hold only matters while chats run; a
 * server crash or fail-over empties them, and the chats they ordered die with the connections.
 */
export const chatTurns = pgTable(
  'chat_turns',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: text('user_id').notNull(),
    holder: text('holder').notNull(),
    heartbeatAt: timestamp('heartbeat_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('chat_turns_user_idx').on(t.userId, t.id),
    index('chat_turns_holder_idx').on(t.holder),
  ],
);

/**
 * Whose chat is running, per user: the ticket that won the turn, refreshed by its holder like
 * the ticket. One row per user, taken and handed over with a single upsert whose condition
 * reads only this row, so two replicas can never both start.
 */
export const chatTurnLocks = pgTable('chat_turn_locks', {
  userId: text('user_id').primaryKey(),
  ticket: bigint('ticket', { mode: 'number' }).notNull(),
  holder: text('holder').notNull(),
  heartbeatAt: timestamp('heartbeat_at', { withTimezone: true }).notNull().defaultNow(),
});

/**
 * A person given their own access to Parley (`POST /admin/users`). A `users` row (profile)
 * exists for every user id that was ever used; an account only for those the administrator
 * created. `limits` overrides the defaults of the environment, per limit (absent = default).
 */
export const accounts = pgTable('accounts', {
  userId: text('user_id').primaryKey(),
  limits: jsonb('limits').$type<Record<string, number>>().notNull().default({}),
  createdAt: createdAt(),
});

/**
 * A user's API key (`pk_…`). Only its SHA-256 is kept: the key is 256 random bits, so a fast
 * hash cannot be searched backwards and a slow one would only cost every request. Revoking a
 * key deletes its row.
 */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => accounts.userId, { onDelete: 'cascade' }),
    hash: text('hash').notNull(),
    /** The first characters of the key, to tell keys apart in lists. */
    prefix: text('prefix').notNull(),
    createdAt: createdAt(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
  },
  (t) => [uniqueIndex('api_keys_hash_idx').on(t.hash), index('api_keys_user_idx').on(t.userId)],
);

/**
 * The chat rate limit of each user, shared by replicas: the generic cell rate algorithm's
 * "theoretical arrival time". One upsert both checks and counts a chat (see
 * src/storage/usage-repository.ts).
 */
export const chatRates = pgTable('chat_rates', {
  userId: text('user_id').primaryKey(),
  tat: timestamp('tat', { withTimezone: true }).notNull(),
});

/** Bytes a user uploaded for ingestion, per day of the user's timezone. */
export const ingestUsage = pgTable(
  'ingest_usage',
  {
    userId: text('user_id').notNull(),
    day: date('day').notNull(),
    bytes: bigint('bytes', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.userId, t.day] })],
);

/**
 * A signed-in browser (the web client). `id` is the SHA-256 of the cookie's random value;
 * `key_id` is the key it was made from (revoking the key ends the session), null for the
 * administrator's token or development mode, where `user_id` is the name typed or null.
 */
export const webSessions = pgTable(
  'web_sessions',
  {
    id: text('id').primaryKey(),
    role: text('role').$type<'admin' | 'user'>().notNull(),
    userId: text('user_id'),
    keyId: uuid('key_id').references(() => apiKeys.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('web_sessions_user_idx').on(t.userId)],
);

/**
 * A prompt the user's assistant answers on a schedule (src/automations/). `schedule` is the
 * Schedule of automations/schedule.ts, read in `timezone`; `next_run_at` is the first
 * occurrence not yet settled (null once a one-time automation has run). Three failed runs in a
 * row pause it (`paused_reason` says why).
 */
export const automations = pgTable(
  'automations',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id').notNull(),
    name: text('name').notNull(),
    prompt: text('prompt').notNull(),
    schedule: jsonb('schedule').notNull(),
    timezone: text('timezone').notNull(),
    status: text('status').$type<'active' | 'paused' | 'finished'>().notNull().default('active'),
    pausedReason: text('paused_reason'),
    nextRunAt: timestamp('next_run_at', { withTimezone: true }),
    consecutiveFailures: integer('consecutive_failures').notNull().default(0),
    /** The automation's own conversation, made at its first run; kept from run to run. */
    conversationId: uuid('conversation_id').references(() => conversations.id, {
      onDelete: 'set null',
    }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    index('automations_user_id_idx').on(t.userId),
    index('automations_due_idx').on(t.nextRunAt).where(sql`${t.status} = 'active'`),
  ],
);

/**
 * One run of an automation: its row is the claim (unique per automation, kind and occurrence),
 * so an occurrence runs once across replicas and restarts. `claimed_until`: a 'running' row whose
 * runner died is taken over after it. `read_at` null on a settled run: the web client's
 * unread mark.
 */
export const automationRuns = pgTable(
  'automation_runs',
  {
    id: uuid('id').primaryKey(),
    automationId: uuid('automation_id')
      .notNull()
      .references(() => automations.id, { onDelete: 'cascade' }),
    occurrence: timestamp('occurrence', { withTimezone: true }).notNull(),
    manual: boolean('manual').notNull().default(false),
    status: text('status')
      .$type<'queued' | 'running' | 'done' | 'failed' | 'refused' | 'skipped'>()
      .notNull(),
    claimedUntil: timestamp('claimed_until', { withTimezone: true }),
    startedAt: timestamp('started_at', { withTimezone: true }),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    chatRunId: uuid('chat_run_id'),
    error: text('error'),
    deliveredTo: text('delivered_to'),
    readAt: timestamp('read_at', { withTimezone: true }),
  },
  (t) => [
    // A "run now" run is named by the instant it was asked for, which may be a scheduled
    // run's own: each kind is once per instant, and neither takes the other's place.
    uniqueIndex('automation_runs_kind_occurrence_idx').on(t.automationId, t.manual, t.occurrence),
    index('automation_runs_open_idx').on(t.status).where(sql`${t.status} IN ('queued', 'running')`),
  ],
);

/**
 * A resumable answer (`"resumable": true` on POST /chat, the web client, Telegram): which
 * process generates it (`holder`, kept alive by `heartbeat_at`), whether its owner asked it to
 * stop, and how far its event log goes. Ended runs and their events are pruned after
 * RUN_EVENTS_KEEP_HOURS. A run whose holder died (its heartbeat stale) is ended by a listener
 * or by the sweep every lease, which stores its `turn` (DetachedRuns).
 */
export const runStreams = pgTable(
  'run_streams',
  {
    runId: uuid('run_id').primaryKey(),
    userId: text('user_id').notNull(),
    status: text('status').$type<'running' | 'ended'>().notNull().default('running'),
    holder: text('holder').notNull(),
    heartbeatAt: timestamp('heartbeat_at', { withTimezone: true }).notNull().defaultNow(),
    stopRequested: boolean('stop_requested').notNull().default(false),
    lastSeq: integer('last_seq').notNull().default(0),
    createdAt: createdAt(),
    endedAt: timestamp('ended_at', { withTimezone: true }),
    /**
     * The question and its place in the conversation (JSON text, read only by Parley): stored
     * as an interrupted turn by whoever ends the run if its holder dies, so the question and
     * the answer as far as it got are not lost with the process (see DetachedRuns).
     */
    turn: text('turn'),
    /**
     * A Telegram answer whose final message has not gone out yet: set with the run (before its
     * answer is stored), cleared once the message went. Its holder's heartbeat keeps it alive
     * after the run ended; a holder that died leaves it to whoever finds it silent, who sends
     * the stored answer (telegram/untold-answers.ts): the run's row is the answer's outbox.
     */
    telegramUntold: boolean('telegram_untold').notNull().default(false),
  },
  (t) => [
    index('run_streams_user_idx').on(t.userId),
    index('run_streams_holder_idx').on(t.holder).where(sql`${t.status} = 'running'`),
    index('run_streams_untold_idx').on(t.createdAt).where(sql`${t.telegramUntold}`),
  ],
);

/**
 * A resumable run's events (any ChatEvent), numbered from 1 (their SSE `id:`s), stored as one
 * row per flush: `events` is the JSON array of events `first_seq`..`last_seq`, kept as text
 * (only Parley reads it). One row per event cost the database a row, a key entry and a
 * foreign-key check per token (issue 32's cost, bench/RESULTS.md); one per flush costs that
 * once per run every 50 ms. A retried flush starts at the same `first_seq` and may carry more.
 */
export const runEventBatches = pgTable(
  'run_event_batches',
  {
    runId: uuid('run_id')
      .notNull()
      .references(() => runStreams.runId, { onDelete: 'cascade' }),
    firstSeq: integer('first_seq').notNull(),
    lastSeq: integer('last_seq').notNull(),
    events: text('events').notNull(),
  },
  (t) => [primaryKey({ columns: [t.runId, t.firstSeq] })],
);

/**
 * An MCP server the administrator added (issue 33): a stdio command (with only the
 * environment variables given for it) or a Streamable HTTP URL. `name` namespaces its tools
 * (`<name>__<tool>`). `approved_*` are the tool definitions the administrator accepted (the
 * first listing is accepted when the server is enabled); `seen_*` the latest listing, which
 * holds the server while its fingerprint differs. `last_*` say why it is down (stderr's last
 * lines are the administrator's only). `listing_cut`: the latest listing had more pages than
 * Parley reads; `listing_stale_since`: a listing asked for by the server (`list_changed`) has
 * failed since then, so the definitions in use may be old.
 */
export const mcpServers = pgTable(
  'mcp_servers',
  {
    id: uuid('id').primaryKey(),
    name: text('name').notNull(),
    transport: text('transport').$type<'stdio' | 'http'>().notNull(),
    command: text('command'),
    args: jsonb('args').$type<string[]>().notNull().default([]),
    env: jsonb('env').$type<Record<string, string>>().notNull().default({}),
    url: text('url'),
    enabled: boolean('enabled').notNull().default(false),
    restricted: boolean('restricted').notNull().default(false),
    trusted: boolean('trusted').notNull().default(false),
    sharedProcess: boolean('shared_process').notNull().default(false),
    approvalTools: jsonb('approval_tools').$type<string[]>().notNull().default([]),
    approvedFingerprint: text('approved_fingerprint'),
    approvedTools: jsonb('approved_tools').$type<unknown[]>(),
    seenFingerprint: text('seen_fingerprint'),
    seenTools: jsonb('seen_tools').$type<unknown[]>(),
    lastError: text('last_error'),
    lastStderr: text('last_stderr'),
    lastErrorAt: timestamp('last_error_at', { withTimezone: true }),
    listingCut: boolean('listing_cut').notNull().default(false),
    listingStaleSince: timestamp('listing_stale_since', { withTimezone: true }),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('mcp_servers_name_idx').on(t.name)],
);

/**
 * One user's relation to a server: `allowed` (the administrator's; null = the server's
 * default: allowed unless restricted), `enabled` (the user's; null = on) and their own
 * credential for an HTTP server, AES-256-GCM encrypted (src/mcp/credential-cipher.ts).
 */
export const mcpServerUsers = pgTable(
  'mcp_server_users',
  {
    serverId: uuid('server_id')
      .notNull()
      .references(() => mcpServers.id, { onDelete: 'cascade' }),
    userId: text('user_id').notNull(),
    allowed: boolean('allowed'),
    enabled: boolean('enabled'),
    credentialHeader: text('credential_header'),
    credential: text('credential'),
    /**
     * Why the server refused this user at their last connection (HTTP 401 or 403: their
     * credential, or none), and since when; null once it took them. The user's own, not the
     * server's status: the server answers the others.
     */
    refusedReason: text('refused_reason'),
    refusedAt: timestamp('refused_at', { withTimezone: true }),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'mcp_server_users_pk', columns: [t.serverId, t.userId] }),
    index('mcp_server_users_user_idx').on(t.userId),
  ],
);

/** A user's standing "always allow" for one tool of one server. */
export const mcpAlwaysAllow = pgTable(
  'mcp_always_allow',
  {
    userId: text('user_id').notNull(),
    serverId: uuid('server_id')
      .notNull()
      .references(() => mcpServers.id, { onDelete: 'cascade' }),
    tool: text('tool').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ name: 'mcp_always_allow_pk', columns: [t.userId, t.serverId, t.tool] })],
);

/**
 * A tool call waiting for its user's decision (`decision` null until then), read by the
 * waiting run on whichever replica it runs.
 */
export const toolApprovals = pgTable(
  'tool_approvals',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id').notNull(),
    runId: uuid('run_id').notNull(),
    serverId: uuid('server_id')
      .notNull()
      .references(() => mcpServers.id, { onDelete: 'cascade' }),
    tool: text('tool').notNull(),
    arguments: jsonb('arguments').notNull(),
    decision: text('decision').$type<'approve' | 'deny' | 'always' | 'expired'>(),
    createdAt: createdAt(),
    decidedAt: timestamp('decided_at', { withTimezone: true }),
  },
  (t) => [index('tool_approvals_user_idx').on(t.userId, t.createdAt)],
);

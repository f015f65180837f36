import { orm, pgCore } from './orm.ts';

const { sql } = orm;
const {
  bigserial,
  boolean,
  customType,
  date,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
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

const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });
const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow();

/** The user profile: what the assistant knows about the person, injected into prompts. */
export const users = pgTable('users', {
  userId: text('user_id').primaryKey(),
  displayName: text('display_name'),
  timezone: text('timezone'),
  locale: text('locale'),
  telegramChatId: text('telegram_chat_id'),
  /** Free-form facts the assistant keeps about the user (name, preferences…). */
  facts: jsonb('facts').$type<Record<string, string>>().notNull().default({}),
  createdAt: createdAt(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

/**
 * Conversation history: one row per model message (AI SDK `ModelMessage` JSON), in `id` order.
 * Reasoning is never stored. `interrupted` marks an answer cut short by a client disconnect.
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
  },
  (t) => [index('messages_user_id_idx').on(t.userId, t.id)],
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
  },
  (t) => [
    index('feedback_run_id_idx').on(t.runId),
    index('feedback_pending_idx').on(t.nextAttemptAt).where(sql`${t.forwardedAt} IS NULL`),
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
  },
  (t) => [primaryKey({ columns: [t.reminderId, t.daysBefore] })],
);

/** Knowledge graph triples (spec §2), unique per user. */
export const graphTriples = pgTable(
  'graph_triples',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    userId: text('user_id').notNull(),
    subject: text('subject').notNull(),
    relation: text('relation').notNull(),
    object: text('object').notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('graph_triples_unique_idx').on(t.userId, t.subject, t.relation, t.object)],
);

/**
 * An ingested source. Uploaded documents are shared by all users (`userId` null, listed by
 * `GET /documents`); indexed conversations belong to one user and are never listed.
 */
export const documents = pgTable(
  'documents',
  {
    source: text('source').primaryKey(),
    kind: text('kind').$type<'document' | 'conversation'>().notNull().default('document'),
    userId: text('user_id'),
    filename: text('filename'),
    contentType: text('content_type'),
    bytes: integer('bytes'),
    chunkCount: integer('chunk_count').notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [index('documents_kind_idx').on(t.kind, t.source)],
);

export const chunks = pgTable(
  'chunks',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    source: text('source')
      .notNull()
      .references(() => documents.source, { onDelete: 'cascade', onUpdate: 'cascade' }),
    userId: text('user_id'),
    chunkIndex: integer('chunk_index').notNull(),
    content: text('content').notNull(),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    /** 'simple' config: no language-specific stemming, so Korean and English both tokenize. */
    tsv: tsvector('tsv').generatedAlwaysAs(sql`to_tsvector('simple', content)`),
  },
  (t) => [
    index('chunks_source_idx').on(t.source, t.chunkIndex),
    index('chunks_tsv_idx').using('gin', t.tsv),
  ],
);

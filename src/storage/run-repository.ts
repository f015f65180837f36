import type { ModelMessage } from 'ai';
import { TurnLostError } from '../assistant/user-chat-lock.ts';
import type { Db } from './database.ts';
import { turnRows } from './message-repository.ts';
import { searchTerms } from './message-search.ts';
import { storableText } from './storable-text.ts';

export interface RunOutcome {
  status: 'completed' | 'failed' | 'interrupted';
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  toolsUsed: string[];
  errorCode?: string | undefined;
  /**
   * The answer, whole or as far as it went, of a run whose conversation the client keeps
   * (the OpenAI-compatible door): it is not added to the stored history, so it is kept here.
   */
  answer?: string | undefined;
}

export interface RunRecord {
  id: string;
  userId: string;
  model: string;
  startedAt: Date;
  /** The shared lock's ticket: the run is stored only while it still holds the user's turn. */
  ticket?: number | undefined;
  /** Where the turn goes; none for a conversation the client keeps (the OpenAI door). */
  turn?: TurnPlace | undefined;
}

/** A turn's place in its conversation's tree. */
export interface TurnPlace {
  conversationId: string;
  /** The turn it follows: null for a first question, undefined for the conversation's leaf. */
  parentRunId: string | null | undefined;
  /** The conversation's title if it has none yet: the question's first words. */
  title: string;
  /**
   * It may not follow the leaf (an edit, a regeneration): the turns after its parent then
   * leave the active path. False for a question that continues the conversation.
   */
  branches?: boolean | undefined;
}

interface PendingRecord {
  run: RunRecord;
  outcome: RunOutcome;
  turn: ModelMessage[];
  finishedAt: Date;
  stored: () => void;
  failed: (error: unknown) => void;
}

/** Runs written in one statement at most; more wait for the next one. */
const MAX_BATCH = 500;

/**
 * Stores runs and their turns (messages) in one statement, so both are stored or neither, and
 * answers the ids stored. A run with a ticket is stored only if that ticket still holds its
 * user's turn (the fence against a replica that stalled past the lock's TTL); `FOR SHARE`
 * makes a replica taking the turn over wait until this statement is done, so its chat reads a
 * history that has this turn or never will. A named statement: planned once per connection.
 *
 * Two of them: only a batch with a turn that branches (an edit, a regeneration) takes the one
 * that moves the later turns off the active path. Its UPDATE of `messages`, though it touches
 * no row for a turn that continues the conversation, cost every turn's statement ~0.2 ms on
 * the embedded engine (bench/turn-write.ts, bench/RESULTS.md, issue 31).
 */
const recordStatement = (branching: boolean) => ({
  name: branching ? 'parley-record-runs-branching' : 'parley-record-runs',
  text: `
    WITH stored_runs AS (
      INSERT INTO chat_runs (id, user_id, status, model, input_tokens, output_tokens,
                             tools_used, error_code, started_at, finished_at, answer,
                             conversation_id)
      SELECT id, user_id, status, model, input_tokens, output_tokens,
             tools_used, error_code, started_at, finished_at, answer, conversation_id
      FROM json_to_recordset($1::json) AS r(
        id uuid, user_id text, status text, model text, input_tokens int, output_tokens int,
        tools_used jsonb, error_code text, started_at timestamptz, finished_at timestamptz,
        ticket bigint, answer text, conversation_id uuid)
      WHERE r.ticket IS NULL OR EXISTS (
        SELECT 1 FROM chat_turn_locks l
         WHERE l.user_id = r.user_id AND l.ticket = r.ticket
           FOR SHARE)
      RETURNING id
    ),
    turns AS (
      SELECT t.id AS run_id, t.conversation_id, t.title, t.branches,
             CASE WHEN t.follows_leaf
                  THEN (SELECT leaf_run_id FROM conversations WHERE id = t.conversation_id)
                  ELSE t.parent_run_id END AS parent_run_id
      FROM json_to_recordset($1::json) AS t(
        id uuid, conversation_id uuid, parent_run_id uuid, follows_leaf boolean, title text,
        has_messages boolean, branches boolean)
      WHERE t.conversation_id IS NOT NULL AND t.has_messages
        AND t.id IN (SELECT id FROM stored_runs)
    ),
    -- The search terms as parley_search_vector(role, content) makes them (migration 0012): the
    -- text and its CJK bigrams computed by the caller (message-search.ts); the function itself
    -- only for a part it would read as JSON. For an answer in parts it cost ~1 ms a chat.
    stored_messages AS (
      INSERT INTO messages (user_id, run_id, role, content, interrupted, conversation_id,
                            parent_run_id, search)
      SELECT m.user_id, m.run_id, m.role, m.content, m.interrupted, t.conversation_id,
             t.parent_run_id,
             CASE WHEN m.role NOT IN ('user', 'assistant') THEN NULL
                  WHEN m.bigrams IS NULL THEN parley_search_vector(m.role, m.content)
                  ELSE to_tsvector('simple', lower(left(m.text, 100000)))
                       || array_to_tsvector(m.bigrams) END
      FROM json_array_elements($2::json) WITH ORDINALITY AS e(message, position),
           json_to_record(e.message) AS m(
             user_id text, run_id uuid, role text, content jsonb, interrupted boolean,
             text text, bigrams text[])
      JOIN turns t ON t.run_id = m.run_id
      ORDER BY e.position
      RETURNING conversation_id, octet_length(content::text) AS bytes
    ),
    ${branching ? LEFT_PATH : ''}
    touched AS (
      UPDATE conversations c
         SET updated_at = now(), leaf_run_id = t.run_id,
             bytes = c.bytes + (SELECT coalesce(sum(s.bytes), 0) FROM stored_messages s
                                 WHERE s.conversation_id = c.id),
             title = CASE WHEN c.title = '' AND c.title_source = 'question'
                          THEN t.title ELSE c.title END
        FROM turns t WHERE c.id = t.conversation_id
    )
    SELECT id FROM stored_runs`,
});

/**
 * A question that does not follow the leaf (an edit, a regeneration) starts a branch: the turns
 * after the one it follows leave the active path (they stay, as other versions).
 */
const LEFT_PATH = `
    left_path AS (
      UPDATE messages o SET on_path = false FROM turns t
       WHERE t.branches AND o.conversation_id = t.conversation_id AND o.on_path
         AND o.id > coalesce((SELECT max(p.id) FROM messages p
                               WHERE p.run_id = t.parent_run_id
                                 AND p.conversation_id = t.conversation_id), 0)
    ),`;
const RECORD = recordStatement(false);
const RECORD_BRANCHING = recordStatement(true);

/**
 * Chat runs: one per `POST /chat`, referenced by feedback. Runs are written once, at the end,
 * before the stream's end event carries their id: a client can only send feedback for a
 * stored run.
 *
 * Writes are group-committed: while one statement is storing, the runs that finish meanwhile
 * wait and then go together in the next one. When chats end one at a time nothing waits;
 * when a thousand end at once (a burst of users, paced alike) they take a few statements
 * instead of a thousand, which matters most on the embedded engine, whose one connection
 * runs statements one after another. Each caller still resolves only once its own turn is
 * stored.
 */
export class RunRepository {
  readonly #db: Db;
  #pending: PendingRecord[] = [];
  #writing = false;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Records a finished run and its turn (the user's message and what was answered). */
  record(run: RunRecord, outcome: RunOutcome, turn: ModelMessage[]): Promise<void> {
    return new Promise((stored, failed) => {
      this.#pending.push({ run, outcome, turn, finishedAt: new Date(), stored, failed });
      if (!this.#writing) void this.#writeAll();
    });
  }

  async #writeAll(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending.splice(0, MAX_BATCH);
        try {
          const stored = await this.#write(batch);
          for (const item of batch) settle(item, stored);
        } catch (error) {
          if (batch.length === 1) {
            batch[0]?.failed(error);
            continue;
          }
          // One bad record must not fail the others: each is tried on its own.
          for (const item of batch) {
            await this.#write([item]).then((stored) => settle(item, stored), item.failed);
          }
        }
      }
    } finally {
      this.#writing = false;
    }
  }

  /** Writes a batch; answers the ids of the runs stored (a fenced-off run is not). */
  async #write(batch: readonly PendingRecord[]): Promise<Set<string>> {
    const runs = batch.map(({ run, outcome, finishedAt, turn }) => ({
      id: run.id,
      user_id: run.userId,
      status: outcome.status,
      model: run.model,
      input_tokens: outcome.inputTokens ?? null,
      output_tokens: outcome.outputTokens ?? null,
      tools_used: outcome.toolsUsed,
      error_code: outcome.errorCode ?? null,
      started_at: run.startedAt.toISOString(),
      finished_at: finishedAt.toISOString(),
      ticket: run.ticket ?? null,
      // PostgreSQL cannot store U+0000 nor half a surrogate pair (as for the messages' JSON).
      answer: outcome.answer === undefined ? null : storableText(outcome.answer),
      conversation_id: run.turn?.conversationId ?? null,
      parent_run_id: run.turn?.parentRunId ?? null,
      follows_leaf: run.turn !== undefined && run.turn.parentRunId === undefined,
      has_messages: turn.length > 0,
      branches: run.turn?.branches ?? false,
      title: run.turn ? storableText(run.turn.title) : null,
    }));
    const messages = batch.flatMap(({ run, outcome, turn }) =>
      turnRows(run.userId, run.id, turn, outcome.status === 'interrupted').map((row) => ({
        user_id: row.userId,
        run_id: row.runId,
        role: row.role,
        content: row.content,
        interrupted: row.interrupted,
        ...termsOf(row.content),
      })),
    );
    // Ahead of queries still waiting for a connection: the end events wait for this one.
    const { rows } = await this.#db.$client.queryFirst<{ id: string }>({
      ...(runs.some((run) => run.branches) ? RECORD_BRANCHING : RECORD),
      values: [JSON.stringify(runs), JSON.stringify(messages)],
    });
    return new Set(rows.map((row) => row.id));
  }
}

/**
 * A stored message's search text and bigrams for the INSERT (its content has no U+0000 left:
 * see turnRows); nulls: the database computes them.
 */
function termsOf(message: { role: string; content: unknown }) {
  return searchTerms(message) ?? { text: null, bigrams: null };
}

function settle(item: PendingRecord, stored: ReadonlySet<string>): void {
  if (stored.has(item.run.id)) item.stored();
  else item.failed(new TurnLostError());
}

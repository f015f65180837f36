import { randomUUID } from 'node:crypto';
import type { Db } from './database.ts';
import { withTransaction } from './transaction.ts';
import { takeUserTurn } from './user-turns.ts';

export type TitleSource = 'question' | 'model' | 'user';

export interface Conversation {
  id: string;
  title: string;
  titleSource: TitleSource;
  pinned: boolean;
  /** It is where a chat without `conversation_id` goes. */
  current: boolean;
  createdAt: Date;
  updatedAt: Date;
  /** The turn being continued; null before the first. */
  leafRunId: string | null;
}

export interface ListedConversation extends Conversation {
  /** The start of the active path's last question or answer. */
  preview: string;
}

/** Where a page of the list ends: the next page starts after it. */
export interface ListCursor {
  pinned: boolean;
  /**
   * `updated_at` in microseconds since 1970 (a Date would lose them; the database's text
   * depends on its DateStyle).
   */
  updatedMicros: number;
  id: string;
}

interface ConversationRow {
  id: string;
  title: string;
  title_source: TitleSource;
  pinned: boolean;
  current: boolean;
  created_at: Date;
  updated_at: Date;
  updated_micros: string;
  leaf_run_id: string | null;
  preview?: string | null;
}

const COLUMNS = `c.id, c.title, c.title_source, c.pinned, c.created_at, c.updated_at,
  (extract(epoch FROM c.updated_at) * 1000000)::bigint::text AS updated_micros, c.leaf_run_id,
  EXISTS (SELECT 1 FROM current_conversations k
           WHERE k.user_id = c.user_id AND k.conversation_id = c.id) AS current`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A chat naming its conversation: checked to be the user's, and made current, at once. */
const MAKE_CURRENT = {
  name: 'parley-make-conversation-current',
  text: `WITH own AS (SELECT id FROM conversations WHERE id = $2 AND user_id = $1),
              pointed AS (
                INSERT INTO current_conversations (user_id, conversation_id)
                SELECT $1, id FROM own
                ON CONFLICT (user_id) DO UPDATE SET conversation_id = EXCLUDED.conversation_id
                WHERE current_conversations.conversation_id <> EXCLUDED.conversation_id)
         SELECT 1 FROM own`,
};

const CURRENT = {
  name: 'parley-current-conversation',
  text: 'SELECT conversation_id AS id FROM current_conversations WHERE user_id = $1',
};

/** The characters of a preview: enough for a line of a list. */
const PREVIEW_CHARS = 160;

/**
 * A user's conversations (the rows of `conversations` and the pointer to the current one).
 * Every statement is scoped by the user: a conversation of another user is never found.
 */
export class ConversationRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * The user's current conversation, made (empty, and current) when they have none. Read by a
   * named statement first (every chat without `conversation_id` asks: planned once per
   * connection); made by one statement, in which of two chats racing to make it one pointer
   * wins and the other reads it.
   */
  async current(userId: string): Promise<string> {
    const existing = await this.currentId(userId);
    if (existing !== undefined) return existing;
    for (let attempt = 0; ; attempt++) {
      const { rows } = await this.#db.$client.query<{ id: string }>(
        `WITH pointed AS (
           INSERT INTO current_conversations (user_id, conversation_id) VALUES ($1, $2)
           ON CONFLICT (user_id) DO NOTHING RETURNING conversation_id
         ), created AS (
           INSERT INTO conversations (id, user_id) SELECT conversation_id, $1 FROM pointed
         )
         SELECT conversation_id AS id FROM pointed
         UNION ALL
         SELECT conversation_id FROM current_conversations WHERE user_id = $1`,
        [userId, randomUUID()],
      );
      const id = rows[0]?.id;
      if (id !== undefined) return id;
      // Another chat made it after this statement's snapshot: read again.
      if (attempt >= 2) throw new Error('the current conversation could not be settled');
    }
  }

  /** The current conversation's id, if the user has one (it is not made). */
  async currentId(userId: string): Promise<string | undefined> {
    const { rows } = await this.#db.$client.query<{ id: string }>({
      ...CURRENT,
      values: [userId],
    });
    return rows[0]?.id;
  }

  /** Makes one of the user's conversations the current one; false when it is not theirs. */
  async makeCurrent(userId: string, id: string): Promise<boolean> {
    const { rows } = await this.#db.$client.query({ ...MAKE_CURRENT, values: [userId, id] });
    return rows.length === 1;
  }

  /**
   * A new conversation, which becomes the current one unless `current` is false; undefined when
   * the user keeps `max` already (the count and the insert in one statement, the user's
   * creations one at a time, as in user-turns.ts).
   */
  async create(
    userId: string,
    title: string | undefined,
    current: boolean,
    max: number,
  ): Promise<Conversation | undefined> {
    const id = randomUUID();
    const inserted = await withTransaction(this.#db.$client, async (client) => {
      await takeUserTurn(client, 'conversationCreate', userId);
      const { rows } = await client.query(
        `WITH created AS (
           INSERT INTO conversations (id, user_id, title, title_source)
           SELECT $2, $1, $3, $4
            WHERE (SELECT count(*) FROM conversations WHERE user_id = $1) < $6
           RETURNING id
         ), made_current AS (
           INSERT INTO current_conversations (user_id, conversation_id)
           SELECT $1, id FROM created WHERE $5
           ON CONFLICT (user_id) DO UPDATE SET conversation_id = EXCLUDED.conversation_id
         )
         SELECT id FROM created`,
        [userId, id, title ?? '', title === undefined ? 'question' : 'user', current, max],
      );
      return rows.length === 1;
    });
    if (!inserted) return undefined;
    const created = await this.get(userId, id);
    if (!created) throw new Error('a conversation just made was not found');
    return created;
  }

  async get(userId: string, id: string): Promise<Conversation | undefined> {
    const { rows } = await this.#db.$client.query<ConversationRow>(
      `SELECT ${COLUMNS} FROM conversations c WHERE c.id = $2 AND c.user_id = $1`,
      [userId, id],
    );
    const row = rows[0];
    return row && toConversation(row);
  }

  /**
   * The newest answer still being written in the conversation, by any door on any replica (a
   * resumable run that registered its turn here), with its question: a second device opening
   * the conversation follows it. One whose writer died stays until it is ended (a lease).
   */
  async running(
    userId: string,
    id: string,
  ): Promise<{ runId: string; question: string } | undefined> {
    const { rows } = await this.#db.$client.query<{ run_id: string; question: string }>(
      `SELECT run_id, turn::json ->> 'question' AS question FROM run_streams
        WHERE user_id = $1 AND status = 'running' AND turn IS NOT NULL
          AND turn::json ->> 'conversationId' = $2
        ORDER BY created_at DESC LIMIT 1`,
      [userId, id],
    );
    const row = rows[0];
    return row && { runId: row.run_id, question: row.question };
  }

  /** Pinned first, then the newest activity; `after` is the last of the previous page. */
  async list(
    userId: string,
    after: ListCursor | undefined,
    limit: number,
  ): Promise<{ conversations: ListedConversation[]; last: ListCursor | undefined }> {
    const { rows } = await this.#db.$client.query<ConversationRow>(
      `SELECT ${COLUMNS},
              (SELECT left(parley_message_text(m.content), ${PREVIEW_CHARS}) FROM messages m
                WHERE m.conversation_id = c.id AND m.on_path AND m.role IN ('user', 'assistant')
                ORDER BY m.id DESC LIMIT 1) AS preview
         FROM conversations c
        WHERE c.user_id = $1
          AND ($2::boolean IS NULL OR (c.pinned, c.updated_at, c.id)
               < ($2, 'epoch'::timestamptz + $3::bigint * interval '1 microsecond', $4::uuid))
        ORDER BY c.pinned DESC, c.updated_at DESC, c.id DESC
        LIMIT $5`,
      [userId, after?.pinned ?? null, after?.updatedMicros ?? null, after?.id ?? null, limit],
    );
    const lastRow = rows.at(-1);
    return {
      conversations: rows.map((row) => ({ ...toConversation(row), preview: row.preview ?? '' })),
      last: lastRow && {
        pinned: lastRow.pinned,
        updatedMicros: Number(lastRow.updated_micros),
        id: lastRow.id,
      },
    };
  }

  /** Renames or pins; a title given here is the user's, which the model never replaces. */
  async update(
    userId: string,
    id: string,
    change: { title?: string | undefined; pinned?: boolean | undefined },
  ): Promise<Conversation | undefined> {
    const { rowCount } = await this.#db.$client.query(
      `UPDATE conversations
          SET title = coalesce($3, title),
              title_source = CASE WHEN $3::text IS NULL THEN title_source ELSE 'user' END,
              pinned = coalesce($4, pinned)
        WHERE id = $2 AND user_id = $1`,
      [userId, id, change.title ?? null, change.pinned ?? null],
    );
    return rowCount === 1 ? this.get(userId, id) : undefined;
  }

  /** The model's title, unless the user named the conversation meanwhile. */
  async setModelTitle(id: string, title: string): Promise<void> {
    await this.#db.$client.query(
      `UPDATE conversations SET title = $2, title_source = 'model'
        WHERE id = $1 AND title_source <> 'user'`,
      [id, title],
    );
  }

  /** The conversation each of these runs went to (runs of the OpenAI door have none). */
  async conversationsOfRuns(
    userId: string,
    runIds: readonly string[],
  ): Promise<Map<string, string>> {
    const valid = runIds.filter((id) => UUID.test(id));
    if (valid.length === 0) return new Map();
    const { rows } = await this.#db.$client.query<{ id: string; conversation_id: string }>(
      `SELECT id, conversation_id FROM chat_runs
        WHERE user_id = $1 AND id = ANY($2::uuid[]) AND conversation_id IS NOT NULL`,
      [userId, valid],
    );
    return new Map(rows.map((row) => [row.id, row.conversation_id]));
  }

  /** The runs whose turns are in these conversations (their memories go with them). */
  async runIds(userId: string, id: string | undefined): Promise<string[]> {
    const { rows } = await this.#db.$client.query<{ id: string }>(
      `SELECT id FROM chat_runs
        WHERE user_id = $1 AND conversation_id IS NOT NULL
          AND ($2::uuid IS NULL OR conversation_id = $2)`,
      [userId, id ?? null],
    );
    return rows.map((row) => row.id);
  }

  /**
   * Deletes one conversation (every version of every turn; the current pointer and a pending
   * title go with it), or all of the user's, with the memory decisions still pending for
   * their runs. Returns how many conversations went.
   */
  async delete(userId: string, id: string | undefined): Promise<number> {
    return withTransaction(this.#db.$client, async (client) => {
      await client.query(
        `DELETE FROM memory_decisions
          WHERE user_id = $1 AND run_id IN (
            SELECT id FROM chat_runs WHERE user_id = $1 AND conversation_id IS NOT NULL
               AND ($2::uuid IS NULL OR conversation_id = $2))`,
        [userId, id ?? null],
      );
      const { rowCount } = await client.query(
        'DELETE FROM conversations WHERE user_id = $1 AND ($2::uuid IS NULL OR id = $2)',
        [userId, id ?? null],
      );
      return rowCount ?? 0;
    });
  }

  /**
   * Clears the current conversation's turns (POST /reset): the conversation stays current,
   * empty, and titled afresh by its next question unless the user named it.
   */
  async clearCurrent(userId: string): Promise<number> {
    return withTransaction(this.#db.$client, async (client) => {
      const { rows } = await client.query<{ id: string }>(
        `UPDATE conversations c
            SET leaf_run_id = NULL, bytes = 0,
                title = CASE WHEN c.title_source = 'user' THEN c.title ELSE '' END,
                title_source = CASE WHEN c.title_source = 'user' THEN 'user' ELSE 'question' END
           FROM current_conversations k
          WHERE k.user_id = $1 AND c.id = k.conversation_id
          RETURNING c.id`,
        [userId],
      );
      const id = rows[0]?.id;
      if (id === undefined) return 0;
      await client.query('DELETE FROM title_requests WHERE conversation_id = $1', [id]);
      // No RETURNING: parsing the ids of a long history costs (bench/RESULTS.md §2).
      const deleted = await client.query('DELETE FROM messages WHERE conversation_id = $1', [id]);
      return deleted.rowCount ?? 0;
    });
  }
}

function toConversation(row: ConversationRow): Conversation {
  return {
    id: row.id,
    title: row.title,
    titleSource: row.title_source,
    pinned: row.pinned,
    current: row.current,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    leafRunId: row.leaf_run_id,
  };
}

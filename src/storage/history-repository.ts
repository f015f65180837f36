import type { Db } from './database.ts';

export interface StoredTurn {
  /** Where the turn starts in the conversation: the cursor for older turns. */
  position: string;
  runId: string;
  /** The turn this one followed; null for a first question. */
  parentRunId: string | null;
  /** The versions of this turn (itself and its siblings: edits and regenerations), oldest first. */
  versions: string[];
  createdAt: Date;
  question: string;
  answer: string;
  interrupted: boolean;
  status: 'running' | 'completed' | 'failed' | 'interrupted' | null;
  feedback: { score: number; comment: string | null } | null;
}

interface Row {
  position: string;
  run_id: string;
  parent_run_id: string | null;
  role: string;
  content: unknown;
  interrupted: boolean;
  created_at: Date;
}

/**
 * A conversation's active path as turns (a question and its answer, one chat run), newest
 * first, for people reading it back. Each query walks the path's partial index
 * `(conversation_id, id) WHERE on_path` from the newest end: a turn's rows are contiguous (one
 * user's chats run one at a time and a turn is stored in one statement), and each starts with
 * the user's message. The caller has checked that the conversation is the user's.
 */
export class HistoryRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async turns(
    conversationId: string,
    before: string | undefined,
    limit: number,
  ): Promise<StoredTurn[]> {
    const client = this.#db.$client;
    // The ids go out as text (a bigint may pass 2^53) under another name: ORDER BY id must
    // sort the column, not the text.
    const starts = await client.query<{ position: string }>(
      `SELECT id::text AS position FROM messages
        WHERE conversation_id = $1 AND on_path AND role = 'user' AND run_id IS NOT NULL
          AND ($2::bigint IS NULL OR id < $2::bigint)
        ORDER BY id DESC LIMIT $3`,
      [conversationId, before ?? null, limit],
    );
    const oldest = starts.rows.at(-1)?.position;
    if (oldest === undefined) return [];
    const { rows } = await client.query<Row>(
      `SELECT id::text AS position, run_id, parent_run_id, role, content, interrupted, created_at
         FROM messages
        WHERE conversation_id = $1 AND on_path AND id >= $2::bigint
          AND ($3::bigint IS NULL OR id < $3::bigint) AND run_id IS NOT NULL
        ORDER BY id`,
      [conversationId, oldest, before ?? null],
    );
    const turns = new Map<string, StoredTurn>();
    for (const row of rows) {
      let turn = turns.get(row.run_id);
      if (!turn) {
        turn = {
          position: row.position,
          runId: row.run_id,
          parentRunId: row.parent_run_id,
          versions: [row.run_id],
          createdAt: new Date(row.created_at),
          question: '',
          answer: '',
          interrupted: false,
          status: null,
          feedback: null,
        };
        turns.set(row.run_id, turn);
      }
      const text = textOf(row.content);
      if (row.role === 'user') turn.question = text;
      else if (row.role === 'assistant' && text) {
        turn.answer = turn.answer ? `${turn.answer}\n\n${text}` : text;
      }
      turn.interrupted ||= row.interrupted;
    }
    const runs = await client.query<{
      id: string;
      status: StoredTurn['status'];
      score: number | null;
      comment: string | null;
    }>(
      `SELECT r.id, r.status, f.score, f.comment FROM chat_runs r
         LEFT JOIN LATERAL (SELECT score, comment FROM feedback
                             WHERE run_id = r.id ORDER BY updated_at DESC LIMIT 1) f ON true
        WHERE r.id = ANY($1::uuid[])`,
      [[...turns.keys()]],
    );
    for (const run of runs.rows) {
      const turn = turns.get(run.id);
      if (!turn) continue;
      turn.status = run.status;
      if (run.score !== null) turn.feedback = { score: run.score, comment: run.comment };
    }
    await this.#versions(conversationId, [...turns.values()]);
    return [...turns.values()].reverse();
  }

  /** Each turn's siblings: the turns that followed the same one (or, for the first, none). */
  async #versions(conversationId: string, turns: StoredTurn[]): Promise<void> {
    const parents = [...new Set(turns.flatMap((turn) => turn.parentRunId ?? []))];
    const { rows } = await this.#db.$client.query<{ run_id: string; parent_run_id: string | null }>(
      `SELECT run_id, parent_run_id FROM messages
        WHERE conversation_id = $1 AND role = 'user' AND run_id IS NOT NULL
          AND (parent_run_id = ANY($2::uuid[]) OR ($3 AND parent_run_id IS NULL))
        ORDER BY id`,
      [conversationId, parents, turns.some((turn) => turn.parentRunId === null)],
    );
    const siblings = new Map<string | null, string[]>();
    for (const row of rows) {
      const list = siblings.get(row.parent_run_id) ?? [];
      list.push(row.run_id);
      siblings.set(row.parent_run_id, list);
    }
    for (const turn of turns) turn.versions = siblings.get(turn.parentRunId) ?? [turn.runId];
  }
}

/** The words of a stored message: a string, or the text parts of a message's content. */
export function textOf(content: unknown): string {
  const value = (content as { content?: unknown } | null)?.content;
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) return '';
  return value
    .filter((part): part is { type: 'text'; text: string } => part?.type === 'text')
    .map((part) => part.text)
    .join('');
}

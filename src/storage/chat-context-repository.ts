import type { ModelMessage } from 'ai';
import type { UserProfile } from '../assistant/system-prompt.ts';
import type { Db } from './database.ts';

export interface ChatContext {
  /** Undefined for a user who has never told the assistant anything about themselves. */
  profile: UserProfile | undefined;
  /** The latest messages of the path continued, oldest first. */
  history: ModelMessage[];
  /** The conversation's turn being continued (null before the first). */
  leafRunId: string | null;
  /**
   * Whether any MCP server is enabled: without one, a chat does not look for their tools (a
   * statement of its own per chat, bench/RESULTS.md, issue 31).
   */
  toolServers: boolean;
}

/** Which path of a conversation a chat continues. */
export interface ChatPath {
  conversationId: string;
  /** The turn the question follows: undefined for the leaf, null for a first question. */
  parentRunId: string | null | undefined;
}

/**
 * One statement for everything a chat reads before calling the model. It is a named
 * (prepared) statement, which Drizzle cannot express: Postgres then plans it once per
 * connection instead of on every chat, 0.61 -> 0.17 ms on the embedded engine.
 */
const LOAD = {
  name: 'parley-chat-context',
  text: `
    SELECT
      (SELECT json_build_object(
          'displayName', display_name, 'timezone', timezone, 'locale', locale, 'facts', facts)
         FROM users WHERE user_id = $1) AS profile,
      (SELECT leaf_run_id FROM conversations WHERE id = $3) AS leaf,
      EXISTS (SELECT 1 FROM mcp_servers WHERE enabled) AS tool_servers,
      COALESCE(
        (SELECT json_agg(content ORDER BY id)
           FROM (SELECT id, content FROM messages
                  WHERE conversation_id = $3 AND on_path AND NOT $5
                    AND ($4::uuid IS NULL OR id <= (
                          SELECT max(p.id) FROM messages p
                           WHERE p.run_id = $4 AND p.conversation_id = $3))
                  ORDER BY id DESC LIMIT $2) AS recent),
        '[]'::json) AS history`,
};

/**
 * What a chat reads before calling the model: every round trip here is time before the first
 * token, and the embedded engine runs statements one at a time.
 */
export class ChatContextRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * The history is the active path up to the turn continued (the path must run through it:
   * see TurnRepository.activate); none without a path (a conversation the client keeps).
   */
  async load(userId: string, historyRows: number, path?: ChatPath): Promise<ChatContext> {
    const { rows } = await this.#db.$client.query<{
      profile: UserProfile | null;
      history: ModelMessage[];
      leaf: string | null;
      tool_servers: boolean;
    }>({
      ...LOAD,
      values: [
        userId,
        path ? historyRows : 0,
        path?.conversationId ?? null,
        path?.parentRunId ?? null,
        path?.parentRunId === null,
      ],
    });
    const row = rows[0];
    return {
      profile: row?.profile ?? undefined,
      history: row?.history ?? [],
      leafRunId: row?.leaf ?? null,
      toolServers: row?.tool_servers ?? false,
    };
  }
}

import type pg from 'pg';
import type { Db } from './database.ts';

/**
 * The user's timezone (their profile's, else the default `$2`). Only a name: an offset such
 * as `-0330`, which earlier versions stored, PostgreSQL refuses (every chat of that user
 * failed) or reads the other way round (`+05:00`); the default counts then.
 */
const USER_TZ = `coalesce((SELECT timezone FROM users
                            WHERE user_id = $1::text AND timezone ~ '^[A-Za-z]'), $2::text)`;
/**
 * The user's day is taken at the service's instant `now` (a parameter: a run's `started_at` is
 * the service's time too, and a test can set this one), not at the database's `now()`.
 */
const localNow = (now: string) => `(${now}::timestamptz AT TIME ZONE ${USER_TZ})`;
/**
 * Midnight starting the user's day, and the next one, as instants. The arithmetic is done on
 * the local wall clock and only then read in the timezone: a day is 23 or 25 hours long when
 * the clocks change, so "today's start + 24 hours" (in UTC) missed the next midnight by an hour
 * (a negative wait at 23:30 on the day summer time ends). A midnight the clocks skip is read
 * with the offset before the change, which is the instant the day begins.
 */
const todayStarts = (now: string) =>
  `(date_trunc('day', ${localNow(now)}) AT TIME ZONE ${USER_TZ})`;
const tomorrowStarts = (now: string) =>
  `((date_trunc('day', ${localNow(now)}) + interval '1 day') AT TIME ZONE ${USER_TZ})`;
const tokensToday = (now: string) =>
  `(SELECT coalesce(sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)), 0)
      FROM chat_runs WHERE user_id = $1 AND started_at >= ${todayStarts(now)})`;

/** Whose day a limit counts: the user's timezone (else `defaultTimezone`) at `now`. */
export interface UserDay {
  defaultTimezone: string;
  now: Date;
}

/**
 * Checks the chat limits and counts the chat in one statement, exact under any concurrency
 * and across replicas: the rate is the generic cell rate algorithm on the user's `chat_rates`
 * row (each chat moves its "theoretical arrival time" `tat` on by 60 s / limit, and a chat is
 * admitted while `tat` stays within a minute of now, so `limit` chats fit in any minute),
 * whose upsert locks that row; tokens are those of the user's runs started today. `$3` is the
 * interval in ms (0: no rate limit), `$4` the token limit (0: none), `$5` whether to enforce
 * (false counts the chat without refusing it: the administrator's, unless limited), `$6` the
 * service's instant the day is taken at. The rate keeps the database's clock: one clock for
 * every replica, where a second matters; a day's edge does not need that.
 *
 * The admitted row also carries the user's current conversation (null when they have none
 * yet), read in the same statement: a chat without `conversation_id` needs it before its
 * stream starts, and a round trip of its own cost the embedded engine a statement per chat
 * (bench/RESULTS.md, issue 31).
 */
const admitChat = (name: string, tokensCondition: string) => ({
  name,
  text: `
    INSERT INTO chat_rates AS r (user_id, tat)
    SELECT $1::text, now() + $3::float8 * interval '1 millisecond'
     WHERE ${tokensCondition}
    ON CONFLICT (user_id) DO UPDATE
      SET tat = greatest(r.tat, now()) + $3::float8 * interval '1 millisecond'
     WHERE NOT $5::boolean
        OR greatest(r.tat, now()) + $3::float8 * interval '1 millisecond' <= now() + interval '1 minute'
    RETURNING tat,
      (SELECT conversation_id FROM current_conversations WHERE user_id = $1::text)
        AS current_conversation`,
});
/** With a token limit to enforce, the day's tokens are summed in the same statement. */
const ADMIT_CHAT_WITH_TOKENS = admitChat(
  'parley-admit-chat-tokens',
  `NOT $5::boolean OR $4::bigint = 0 OR ${tokensToday('$6')} < $4::bigint`,
);
/**
 * Without one (the default), runs are not read at all. The condition is always true; it names
 * the parameters the other statement reads, so both take the same values.
 */
const ADMIT_CHAT = admitChat(
  'parley-admit-chat',
  `$2::text IS NOT NULL OR $4::bigint IS NOT NULL OR $6::timestamptz IS NOT NULL OR TRUE`,
);

/** An admitted chat: what the admission statement read besides. */
export interface AdmittedChat {
  /** The user's current conversation as the chat was admitted; null: they have none yet. */
  currentConversationId: string | null;
}

export interface ChatRateState {
  /** Milliseconds until the rate's "theoretical arrival time" (0 when it is past). */
  tatAheadMs: number;
  tokensToday: number;
  /** Milliseconds until today ends in the user's timezone. */
  dayEndsInMs: number;
}

/** Usage counters for the per-user limits (see src/accounts/usage-limits.ts). */
export class UsageRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** The admitted chat (counted), or undefined when a limit refuses it. */
  async admitChat(
    userId: string,
    day: UserDay,
    intervalMs: number,
    tokensPerDay: number,
    enforce: boolean,
  ): Promise<AdmittedChat | undefined> {
    const statement = enforce && tokensPerDay > 0 ? ADMIT_CHAT_WITH_TOKENS : ADMIT_CHAT;
    const { rows } = await this.#db.$client.query<{ current_conversation: string | null }>({
      ...statement,
      values: [userId, day.defaultTimezone, intervalMs, tokensPerDay, enforce, day.now],
    });
    const row = rows[0];
    return row && { currentConversationId: row.current_conversation };
  }

  async chatState(userId: string, day: UserDay): Promise<ChatRateState> {
    const { rows } = await this.#db.$client.query<{
      tat_ahead_ms: string | null;
      tokens_today: string;
      day_ends_in_ms: string;
    }>(
      `SELECT (SELECT greatest(0, extract(epoch FROM tat - now()) * 1000)
                 FROM chat_rates WHERE user_id = $1) AS tat_ahead_ms,
              ${tokensToday('$3')} AS tokens_today,
              extract(epoch FROM ${tomorrowStarts('$3')} - $3::timestamptz) * 1000 AS day_ends_in_ms`,
      [userId, day.defaultTimezone, day.now],
    );
    const row = rows[0];
    return {
      tatAheadMs: Number(row?.tat_ahead_ms ?? 0),
      tokensToday: Number(row?.tokens_today ?? 0),
      dayEndsInMs: Number(row?.day_ends_in_ms ?? 0),
    };
  }

  /**
   * Adds an upload to the user's bytes of today, unless that would pass `limitBytes` (0: no
   * limit) while `enforce`. True when counted.
   */
  async addIngest(
    userId: string,
    day: UserDay,
    bytes: number,
    limitBytes: number,
    enforce: boolean,
  ): Promise<boolean> {
    const { rows } = await this.#db.$client.query(
      `INSERT INTO ingest_usage AS u (user_id, day, bytes)
       SELECT $1::text, ${localNow('$6')}::date, $3::bigint
        WHERE NOT $5::boolean OR $4::bigint = 0 OR $3::bigint <= $4::bigint
       ON CONFLICT (user_id, day) DO UPDATE SET bytes = u.bytes + $3::bigint
        WHERE NOT $5::boolean OR $4::bigint = 0 OR u.bytes + $3::bigint <= $4::bigint
       RETURNING bytes`,
      [userId, day.defaultTimezone, bytes, limitBytes, enforce, day.now],
    );
    return rows.length > 0;
  }

  async ingestBytesToday(userId: string, day: UserDay): Promise<number> {
    const { rows } = await this.#db.$client.query<{ bytes: string }>(
      `SELECT bytes FROM ingest_usage WHERE user_id = $1 AND day = ${localNow('$3')}::date`,
      [userId, day.defaultTimezone, day.now],
    );
    return Number(rows[0]?.bytes ?? 0);
  }

  /**
   * Bytes of the user's private documents (leaving out one source, about to be replaced) and
   * conversations (every version of every turn; each conversation keeps its own sum).
   */
  async storedBytes(userId: string, except?: string): Promise<number> {
    return storedBytesOf(this.#db.$client, userId, except);
  }

  /** Chats of the user that started in the last minute (runs are stored when they end). */
  async runsLastMinute(userId: string): Promise<number> {
    const { rows } = await this.#db.$client.query<{ n: string }>(
      `SELECT count(*) AS n FROM chat_runs
        WHERE user_id = $1 AND started_at > now() - interval '1 minute'`,
      [userId],
    );
    return Number(rows[0]?.n ?? 0);
  }
}

/**
 * What a user's storage limit counts: their private documents (but `except`, a source about
 * to be replaced) and their conversations. Also read inside the transaction that makes a new
 * document visible (document-repository.ts), where uploads of one user take turns.
 */
export async function storedBytesOf(
  client: Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>,
  userId: string,
  except?: string,
): Promise<number> {
  const { rows } = await client.query<{ bytes: string }>(
    `SELECT (SELECT coalesce(sum(bytes), 0) FROM documents
              WHERE owner = $1 AND kind = 'document' AND ($2::text IS NULL OR source <> $2))
          + (SELECT coalesce(sum(bytes), 0) FROM conversations WHERE user_id = $1) AS bytes`,
    [userId, except ?? null],
  );
  return Number(rows[0]?.bytes ?? 0);
}

import type { ChatErrorCode } from '../assistant/chat-events.ts';
import type { Db } from './database.ts';
import { textOf } from './history-repository.ts';

/** The channel replicas hear about resumable runs on (server engine only). */
export const RUN_CHANNEL = 'parley_runs';

/** One stored event of a run: its number (the SSE `id:`) and the event, as JSON. */
export interface StoredRunEvent {
  seq: number;
  event: unknown;
}

/** How far a run's log went in one flush, and whether the run ended with it. */
export interface RunProgress {
  runId: string;
  lastSeq: number;
  ended: boolean;
}

/** A run's state and the events after the ones a reader has, as one read returns them. */
export interface RunRead {
  status: 'running' | 'ended';
  /** Milliseconds since its holder last showed it was alive (database clock). */
  silentMs: number;
  /** The number of its last stored event (its end's, once it ended). */
  lastSeq: number;
  /** The events after `after`, in order. */
  events: StoredRunEvent[];
  /** The read stopped at its limit: more events are stored after these (read again). */
  more: boolean;
}

/** Stored batches returned by one read (a batch is one flush of one run); a longer log takes several. */
const READ_BATCHES = 500;

/**
 * Appends one batch of events per run (its events since the last flush, as one row), moves
 * each run's `last_seq` and heartbeat (and marks the ended ones), and, on a server, tells
 * every replica how far each run now goes: one statement per flush, whatever the number of
 * runs and events in it. A flush tried again after a failure starts at the same `first_seq`
 * and may carry more events: its row replaces the shorter one the first try may have
 * committed, so nothing is stored twice. A run that is no longer running (its end stored,
 * or ended as abandoned by another replica) takes no more events.
 *
 * `events` reaches the text column as the JSON array's own text (json_to_recordset gives a
 * non-string value's text to a text column), so PostgreSQL never parses an event.
 */
const appendStatement = (notify: boolean) => ({
  name: notify ? 'parley-run-event-batches-notify' : 'parley-run-event-batches',
  text: `
    WITH stored AS (
      INSERT INTO run_event_batches (run_id, first_seq, last_seq, events)
      SELECT b.run_id, b.first_seq, b.last_seq, b.events
        FROM json_to_recordset($1::json) AS b(run_id uuid, first_seq int, last_seq int, events text)
       WHERE EXISTS (SELECT 1 FROM run_streams s WHERE s.run_id = b.run_id AND s.status = 'running')
      ON CONFLICT (run_id, first_seq) DO UPDATE
         SET last_seq = excluded.last_seq, events = excluded.events
       WHERE run_event_batches.last_seq < excluded.last_seq
    ),
    moved AS (
      UPDATE run_streams s
         SET last_seq = greatest(s.last_seq, p.last_seq), heartbeat_at = now(),
             status = CASE WHEN p.ended THEN 'ended' ELSE s.status END,
             ended_at = CASE WHEN p.ended THEN coalesce(s.ended_at, now()) ELSE s.ended_at END
        FROM json_to_recordset($2::json) AS p(run_id uuid, last_seq int, ended boolean)
       WHERE s.run_id = p.run_id AND s.status = 'running'
      RETURNING s.run_id, s.last_seq
    )
    ${
      notify
        ? `SELECT pg_notify('${RUN_CHANNEL}', 'e:' || run_id || ':' || last_seq) FROM moved`
        : 'SELECT count(*) FROM moved'
    }`,
});

/** A run ended because its holder died: what is to be stored of it. */
export interface AbandonedRun {
  userId: string;
  startedAt: Date;
  /** What its holder registered (DetachedRuns' PendingTurn, as JSON); none for some doors. */
  turn: string | undefined;
  /** Its holder stored the run (and its turn) before it died: there is nothing to store. */
  recorded: boolean;
  /** The text it had streamed, as its listeners saw it (thinking included, when shown). */
  text: string;
}

/** A Telegram answer stored whose final message is not known to have gone (claimUntold). */
export interface UntoldRun {
  runId: string;
  /** What its holder registered (DetachedRuns' PendingTurn, as JSON). */
  turn: string | undefined;
  /** The stored answer, as the history shows it. */
  answer: string;
  /** The error event the run ended with, if any. */
  error: { code: ChatErrorCode; message: string; percent?: number } | undefined;
  /** Its owner stopped it. */
  stopped: boolean;
}

/** A run's events in one flush: numbered `firstSeq` on, consecutive. */
export interface RunEventBatch {
  runId: string;
  firstSeq: number;
  events: readonly unknown[];
}

/**
 * The event log of resumable runs (migration 0013): written in batches by the process that
 * generates a run, read by any process a client resumes on. The database's clock decides
 * whether a holder is still alive, so replicas with drifting clocks agree.
 */
export class RunEventRepository {
  readonly #db: Db;
  readonly #notify: boolean;
  #opening: {
    row: {
      run_id: string;
      user_id: string;
      holder: string;
      turn: string | null;
      telegram_untold: boolean;
    };
    opened: () => void;
    failed: (error: unknown) => void;
  }[] = [];
  #openingNow = false;

  /** `notify`: a PostgreSQL server, where other replicas LISTEN for the runs' progress. */
  constructor(db: Db, options: { notify: boolean }) {
    this.#db = db;
    this.#notify = options.notify;
  }

  /**
   * Registers a run about to be generated by `holder` (before its first event), with the
   * turn to store should its holder die (`turn`, JSON text), and whether a Telegram chat is
   * to be sent its final message (`telegram`: the row is that message's outbox until `told`).
   * Group committed: runs registered while a statement is under way go together in the next
   * one, so a burst of a thousand chats takes a few statements, not a thousand.
   */
  open(
    runId: string,
    userId: string,
    holder: string,
    turn?: string,
    telegram = false,
  ): Promise<void> {
    return new Promise((opened, failed) => {
      // `telegram` is not read from `turn` in SQL: the turn's text may hold half of a
      // surrogate pair (a client's cut), which PostgreSQL's json refuses, and the run with it.
      const row = {
        run_id: runId,
        user_id: userId,
        holder,
        turn: turn ?? null,
        telegram_untold: telegram,
      };
      this.#opening.push({ row, opened, failed });
      if (!this.#openingNow) void this.#openAll();
    });
  }

  async #openAll(): Promise<void> {
    this.#openingNow = true;
    try {
      while (this.#opening.length > 0) {
        const batch = this.#opening.splice(0, 500);
        try {
          await this.#db.$client.query(
            `INSERT INTO run_streams (run_id, user_id, holder, turn, telegram_untold)
             SELECT run_id, user_id, holder, turn, telegram_untold
               FROM json_to_recordset($1::json)
                 AS r(run_id uuid, user_id text, holder text, turn text, telegram_untold boolean)`,
            [JSON.stringify(batch.map((item) => item.row))],
          );
          for (const item of batch) item.opened();
        } catch (error) {
          for (const item of batch) item.failed(error);
        }
      }
    } finally {
      this.#openingNow = false;
    }
  }

  async append(batches: readonly RunEventBatch[], progress: readonly RunProgress[]): Promise<void> {
    const rows = batches.map((b) => ({
      run_id: b.runId,
      first_seq: b.firstSeq,
      last_seq: b.firstSeq + b.events.length - 1,
      events: b.events,
    }));
    const moved = progress.map((p) => ({ run_id: p.runId, last_seq: p.lastSeq, ended: p.ended }));
    await this.#db.$client.queryFirst({
      ...appendStatement(this.#notify),
      values: [JSON.stringify(rows), JSON.stringify(moved)],
    });
  }

  /** The run's state and its events after `after`; undefined when the user has no such run. */
  async read(runId: string, userId: string, after: number): Promise<RunRead | undefined> {
    // The batches come back as one JSON text, `[[first_seq, [events…]], …]`, built from the
    // stored texts without parsing them: one JSON.parse here.
    const { rows } = await this.#db.$client.query<{
      status: 'running' | 'ended';
      silent_ms: number;
      last_seq: number;
      batches: string | null;
      n: number;
    }>(
      `SELECT s.status, s.last_seq,
              (extract(epoch FROM now() - s.heartbeat_at) * 1000)::float8 AS silent_ms,
              b.batches, b.n
         FROM run_streams s
         LEFT JOIN LATERAL (
           SELECT '[' || string_agg('[' || first_seq || ',' || events || ']', ',' ORDER BY first_seq)
                      || ']' AS batches,
                  count(*)::int AS n
             FROM (SELECT first_seq, events FROM run_event_batches
                    WHERE run_id = s.run_id AND last_seq > $3
                    ORDER BY first_seq LIMIT ${READ_BATCHES}) x
         ) b ON true
        WHERE s.run_id = $1 AND s.user_id = $2`,
      [runId, userId, after],
    );
    const row = rows[0];
    if (!row) return undefined;
    const events: StoredRunEvent[] = [];
    const batches = row.batches ? (JSON.parse(row.batches) as [number, unknown[]][]) : [];
    for (const [firstSeq, batch] of batches) {
      batch.forEach((event, i) => {
        if (firstSeq + i > after) events.push({ seq: firstSeq + i, event });
      });
    }
    return {
      status: row.status,
      silentMs: Number(row.silent_ms),
      lastSeq: Number(row.last_seq),
      events,
      more: row.n >= READ_BATCHES,
    };
  }

  /**
   * Asks the run's holder to stop it (it learns of it through the channel, or its next
   * heartbeat). Answers the run's status, or undefined when the user has no such run.
   */
  async requestStop(runId: string, userId: string): Promise<'running' | 'ended' | undefined> {
    const { rows } = await this.#db.$client.query<{ status: 'running' | 'ended' }>(
      `WITH asked AS (
         UPDATE run_streams SET stop_requested = (status = 'running')
          WHERE run_id = $1 AND user_id = $2
         RETURNING run_id, status
       )
       SELECT status${
         this.#notify
           ? `, CASE WHEN status = 'running'
                     THEN pg_notify('${RUN_CHANNEL}', 's:' || run_id) END AS notified`
           : ''
       } FROM asked`,
      [runId, userId],
    );
    return rows[0]?.status;
  }

  /** Tells the run's holder (any replica) that a listener elsewhere follows it. */
  async watch(runId: string): Promise<void> {
    await this.#db.$client.query(`SELECT pg_notify('${RUN_CHANNEL}', 'w:' || $1::text)`, [runId]);
  }

  /**
   * Keeps `holder`'s running runs alive; answers those whose stop was asked for (a stop whose
   * notification this process missed).
   */
  async heartbeat(holder: string): Promise<string[]> {
    const { rows } = await this.#db.$client.query<{ run_id: string; stop_requested: boolean }>(
      `UPDATE run_streams SET heartbeat_at = now()
        WHERE holder = $1 AND (status = 'running' OR telegram_untold)
       RETURNING run_id, stop_requested`,
      [holder],
    );
    return rows.filter((row) => row.stop_requested).map((row) => row.run_id);
  }

  /**
   * Ends a run whose holder has been silent for more than `silentMs` (it died) with the
   * events a listener is to see (the interruption, then the end): stored like the holder's
   * own, so every listener on every replica sees the same ones, once. Answers what the caller
   * is to store of the run (its turn and the text it had streamed), or undefined when the run
   * ended or its holder is alive: of processes ending it at once, one gets it.
   */
  async endAbandoned(
    runId: string,
    silentMs: number,
    ending: readonly unknown[],
  ): Promise<AbandonedRun | undefined> {
    const { rows } = await this.#db.$client.query<{
      user_id: string;
      created_at: Date;
      turn: string | null;
      recorded: boolean;
      text: string | null;
    }>(
      `WITH claimed AS (
         UPDATE run_streams SET status = 'ended', ended_at = now(),
                last_seq = last_seq + json_array_length($3::json),
                -- A turn not stored is told as interrupted by the caller; a stored one is
                -- still to be sent (tellUntold).
                telegram_untold = telegram_untold
                  AND EXISTS (SELECT 1 FROM chat_runs r WHERE r.id = run_streams.run_id)
          WHERE run_id = $1 AND status = 'running'
            AND heartbeat_at < now() - make_interval(secs => $2)
         RETURNING run_id, user_id, created_at, turn, last_seq
       ),
       stored AS (
         INSERT INTO run_event_batches (run_id, first_seq, last_seq, events)
         SELECT run_id, last_seq - json_array_length($3::json) + 1, last_seq, $3
           FROM claimed
         ON CONFLICT (run_id, first_seq) DO NOTHING
       )
       SELECT user_id, created_at, turn,
              -- Its holder stored the run before it died (only its end was not stored).
              EXISTS (SELECT 1 FROM chat_runs r WHERE r.id = claimed.run_id) AS recorded,
              -- The answer's text as its listeners saw it (parsed here only: a rare path).
              (SELECT string_agg(e.event ->> 'text', '' ORDER BY b.first_seq, e.n)
                 FROM run_event_batches b
                 CROSS JOIN LATERAL json_array_elements(b.events::json) WITH ORDINALITY
                   AS e(event, n)
                WHERE b.run_id = claimed.run_id AND e.event ->> 'type' = 'text') AS text${
                  this.#notify
                    ? `,
              pg_notify('${RUN_CHANNEL}', 'e:' || run_id || ':' || last_seq) AS notified`
                    : ''
                }
         FROM claimed`,
      [runId, silentMs / 1000, JSON.stringify(ending)],
    );
    const row = rows[0];
    return (
      row && {
        userId: row.user_id,
        startedAt: new Date(row.created_at),
        turn: row.turn ?? undefined,
        recorded: row.recorded,
        text: row.text ?? '',
      }
    );
  }

  /** The run's Telegram chat has its final message (or will never have it). */
  async told(runId: string): Promise<void> {
    await this.#db.$client.query(
      'UPDATE run_streams SET telegram_untold = false WHERE run_id = $1 AND telegram_untold',
      [runId],
    );
  }

  /** Ended Telegram answers whose final message is not known to have gone, their holder silent. */
  async untold(holder: string, silentMs: number): Promise<string[]> {
    const { rows } = await this.#db.$client.query<{ run_id: string }>(
      `SELECT run_id FROM run_streams
        WHERE telegram_untold AND status = 'ended' AND holder <> $1
          AND heartbeat_at < now() - make_interval(secs => $2)
        ORDER BY created_at LIMIT 100`,
      [holder, silentMs / 1000],
    );
    return rows.map((row) => row.run_id);
  }

  /**
   * Takes over an untold answer as its holder (of processes taking it at once, one gets it;
   * one that dies sending it leaves it silent for the next): the stored answer, and the run's
   * own error or stop, as the chat's final message says them.
   */
  async claimUntold(
    runId: string,
    holder: string,
    silentMs: number,
  ): Promise<UntoldRun | undefined> {
    const { rows } = await this.#db.$client.query<{
      turn: string | null;
      messages: { role: string; content: unknown }[] | null;
      error: string | null;
      stopped: boolean;
    }>(
      `WITH claimed AS (
         UPDATE run_streams SET holder = $2, heartbeat_at = now()
          WHERE run_id = $1 AND telegram_untold AND status = 'ended' AND holder <> $2
            AND heartbeat_at < now() - make_interval(secs => $3)
         RETURNING run_id, turn
       ),
       events AS (
         SELECT e.event, b.first_seq, e.n FROM claimed c
           JOIN run_event_batches b ON b.run_id = c.run_id
          CROSS JOIN LATERAL json_array_elements(b.events::json) WITH ORDINALITY AS e(event, n)
          WHERE e.event ->> 'type' IN ('error', 'done')
       )
       SELECT c.turn,
              (SELECT json_agg(json_build_object('role', m.role, 'content', m.content)
                               ORDER BY m.id)
                 FROM messages m WHERE m.run_id = c.run_id) AS messages,
              -- The run's own error; not the one added when its holder was found dead after
              -- the answer was stored.
              (SELECT event::text FROM events
                WHERE event ->> 'type' = 'error' AND event ->> 'code' <> 'run_interrupted'
                ORDER BY first_seq DESC, n DESC LIMIT 1) AS error,
              EXISTS (SELECT 1 FROM events
                       WHERE event ->> 'type' = 'done' AND event ->> 'stopped' = 'true') AS stopped
         FROM claimed c`,
      [runId, holder, silentMs / 1000],
    );
    const row = rows[0];
    if (!row) return undefined;
    const answer = (row.messages ?? [])
      .filter((message) => message.role === 'assistant')
      .map((message) => textOf(message.content))
      .filter((text) => text !== '')
      .join('\n\n');
    return {
      runId,
      turn: row.turn ?? undefined,
      answer,
      error: row.error ? (JSON.parse(row.error) as UntoldRun['error']) : undefined,
      stopped: row.stopped,
    };
  }

  /**
   * Runs still marked running whose holder is not `holder` and has been silent for more than
   * `silentMs`: their holder died (on the embedded engine, every one another process held).
   */
  async abandoned(holder: string, silentMs: number): Promise<string[]> {
    const { rows } = await this.#db.$client.query<{ run_id: string }>(
      `SELECT run_id FROM run_streams
        WHERE status = 'running' AND holder <> $1
          AND heartbeat_at < now() - make_interval(secs => $2)
        ORDER BY created_at LIMIT 100`,
      [holder, silentMs / 1000],
    );
    return rows.map((row) => row.run_id);
  }

  /**
   * Deletes the logs of runs that ended more than `keepMs` ago, and of runs whose holder
   * died that long ago (their events cascade). Answers how many runs went.
   */
  async prune(keepMs: number): Promise<number> {
    const { rowCount } = await this.#db.$client.query(
      `DELETE FROM run_streams
        WHERE coalesce(ended_at, heartbeat_at) < now() - make_interval(secs => $1)`,
      [keepMs / 1000],
    );
    return rowCount ?? 0;
  }
}

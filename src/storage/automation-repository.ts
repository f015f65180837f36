import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Schedule } from '../automations/schedule.ts';
import type { Db } from './database.ts';
import { withTransaction } from './transaction.ts';
import { takeUserTurn } from './user-turns.ts';

export type AutomationStatus = 'active' | 'paused' | 'finished';
export type RunStatus = 'queued' | 'running' | 'done' | 'failed' | 'refused' | 'skipped';

export interface AutomationRecord {
  id: string;
  userId: string;
  name: string;
  prompt: string;
  schedule: Schedule;
  timezone: string;
  status: AutomationStatus;
  pausedReason: string | null;
  nextRunAt: Date | null;
  consecutiveFailures: number;
  conversationId: string | null;
  createdAt: Date;
  /** Settled runs the user has not seen (the web client's unread mark). */
  unread: number;
}

export interface AutomationRunRecord {
  id: string;
  automationId: string;
  occurrence: Date;
  manual: boolean;
  status: RunStatus;
  startedAt: Date | null;
  finishedAt: Date | null;
  chatRunId: string | null;
  error: string | null;
  deliveredTo: string | null;
  read: boolean;
}

/** A claimed run with what it needs: the automation as it stood at the claim. */
export interface ClaimedRun {
  runId: string;
  automationId: string;
  occurrence: Date;
  manual: boolean;
  userId: string;
  prompt: string;
  name: string;
  conversationId: string | null;
  chatId: string | null;
  schedule: Schedule;
  timezone: string;
}

/** Automations whose next occurrence has come. */
export interface DueAutomation {
  id: string;
  schedule: Schedule;
  timezone: string;
  nextRunAt: Date;
}

/** How a run ended, for its row and its automation's. */
export interface RunOutcome {
  status: 'done' | 'failed' | 'refused' | 'skipped';
  error?: string | undefined;
  chatRunId?: string | undefined;
  deliveredTo?: string | undefined;
  /** A scheduled run's next occurrence (null: none, the automation is finished). */
  nextRunAt: Date | null;
  /** Failures in a row that pause the automation, and the reason it then shows. */
  pauseAfter: number;
  pauseReason: string;
}

const COLUMNS = `a.id, a.user_id, a.name, a.prompt, a.schedule, a.timezone, a.status,
  a.paused_reason, a.next_run_at, a.consecutive_failures, a.conversation_id, a.created_at,
  (SELECT count(*)::int FROM automation_runs r
    WHERE r.automation_id = a.id AND r.read_at IS NULL
      AND r.status IN ('done', 'failed', 'refused')) AS unread`;

interface AutomationRow {
  id: string;
  user_id: string;
  name: string;
  prompt: string;
  schedule: Schedule;
  timezone: string;
  status: AutomationStatus;
  paused_reason: string | null;
  next_run_at: Date | null;
  consecutive_failures: number;
  conversation_id: string | null;
  created_at: Date;
  unread: number;
}

/**
 * Automations and their runs. Times come from the application's clock (a parameter), never
 * the database's `now()`, so tests can move the schedule and replicas agree with their clock.
 */
export class AutomationRepository {
  readonly #db: Db;

  /** Settled runs kept per automation (AUTOMATION_RUNS_KEPT). */
  readonly #runsKept: number;

  constructor(db: Db, runsKept = 100) {
    this.#db = db;
    this.#runsKept = runsKept;
  }

  /**
   * Stores a new automation unless the user has `max` already: the count and the insert in
   * one statement, the user's creations one at a time (see user-turns.ts).
   */
  async create(
    automation: Omit<
      AutomationRecord,
      'id' | 'status' | 'pausedReason' | 'consecutiveFailures' | 'conversationId' | 'unread'
    >,
    max: number,
  ): Promise<AutomationRecord | undefined> {
    const id = randomUUID();
    const inserted = await withTransaction(this.#db.$client, async (client) => {
      await takeUserTurn(client, 'automationCreate', automation.userId);
      const { rows } = await client.query<{ id: string }>(
        `INSERT INTO automations (id, user_id, name, prompt, schedule, timezone, next_run_at,
                                  created_at)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8
          WHERE (SELECT count(*) FROM automations WHERE user_id = $2) < $9
         RETURNING id`,
        [
          id,
          automation.userId,
          automation.name,
          automation.prompt,
          JSON.stringify(automation.schedule),
          automation.timezone,
          automation.nextRunAt,
          automation.createdAt,
          max,
        ],
      );
      return rows.length > 0;
    });
    return inserted ? this.get(automation.userId, id) : undefined;
  }

  async get(userId: string, id: string): Promise<AutomationRecord | undefined> {
    const { rows } = await this.#db.$client.query<AutomationRow>(
      `SELECT ${COLUMNS} FROM automations a WHERE a.user_id = $1 AND a.id = $2`,
      [userId, id],
    );
    return rows[0] && toRecord(rows[0]);
  }

  async list(userId: string): Promise<AutomationRecord[]> {
    const { rows } = await this.#db.$client.query<AutomationRow>(
      `SELECT ${COLUMNS} FROM automations a WHERE a.user_id = $1 ORDER BY a.created_at, a.id`,
      [userId],
    );
    return rows.map(toRecord);
  }

  /** Writes the changed fields; false when the automation is not the user's. */
  async update(
    userId: string,
    id: string,
    change: {
      name?: string;
      prompt?: string;
      schedule?: Schedule;
      timezone?: string;
      status?: AutomationStatus;
      nextRunAt?: Date | null;
      pausedReason?: string | null;
      resetFailures?: boolean;
    },
  ): Promise<boolean> {
    const { rowCount } = await this.#db.$client.query(
      `UPDATE automations SET
          name = COALESCE($3, name),
          prompt = COALESCE($4, prompt),
          schedule = COALESCE($5::jsonb, schedule),
          timezone = COALESCE($6, timezone),
          status = COALESCE($7, status),
          next_run_at = CASE WHEN $8 THEN $9 ELSE next_run_at END,
          paused_reason = CASE WHEN $10 THEN $11 ELSE paused_reason END,
          consecutive_failures = CASE WHEN $12 THEN 0 ELSE consecutive_failures END
        WHERE user_id = $1 AND id = $2`,
      [
        userId,
        id,
        change.name ?? null,
        change.prompt ?? null,
        change.schedule ? JSON.stringify(change.schedule) : null,
        change.timezone ?? null,
        change.status ?? null,
        change.nextRunAt !== undefined,
        change.nextRunAt ?? null,
        change.pausedReason !== undefined,
        change.pausedReason ?? null,
        change.resetFailures ?? false,
      ],
    );
    return rowCount === 1;
  }

  async delete(userId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.#db.$client.query(
      'DELETE FROM automations WHERE user_id = $1 AND id = $2',
      [userId, id],
    );
    return rowCount === 1;
  }

  /** Active automations whose next occurrence is at or before `now`. */
  async due(now: Date, limit: number): Promise<DueAutomation[]> {
    const { rows } = await this.#db.$client.query<{
      id: string;
      schedule: Schedule;
      timezone: string;
      next_run_at: Date;
    }>(
      `SELECT id, schedule, timezone, next_run_at FROM automations
        WHERE status = 'active' AND next_run_at <= $1
        ORDER BY next_run_at, id LIMIT $2`,
      [now, limit],
    );
    return rows.map((row) => ({
      id: row.id,
      schedule: row.schedule,
      timezone: row.timezone,
      nextRunAt: row.next_run_at,
    }));
  }

  /** Runs asked for by "run now" (or whose runner died) that are waiting: (id, occurrence). */
  async waitingManualRuns(now: Date, limit: number): Promise<{ id: string; occurrence: Date }[]> {
    const { rows } = await this.#db.$client.query<{ automation_id: string; occurrence: Date }>(
      `SELECT automation_id, occurrence FROM automation_runs
        WHERE manual AND (status = 'queued' OR (status = 'running' AND claimed_until <= $1))
        ORDER BY occurrence LIMIT $2`,
      [now, limit],
    );
    return rows.map((row) => ({ id: row.automation_id, occurrence: row.occurrence }));
  }

  /**
   * Claims a scheduled occurrence: inserts its run ('running', held until `claimUntil`), or
   * takes over one whose runner died (held past its time). Concurrent claims from ticks,
   * replicas and restarts meet on the unique (automation, kind, occurrence): one gets the row;
   * a "run now" run at the same instant is of the other kind, and takes nothing.
   * Nothing is claimed when the automation is no longer active or was moved past it.
   */
  async claimScheduled(
    automationId: string,
    occurrence: Date,
    now: Date,
    claimUntil: Date,
  ): Promise<ClaimedRun | undefined> {
    const runId = await this.#oneAtATime(automationId, now, async (client) => {
      const { rows } = await client.query<{ id: string }>(
        `INSERT INTO automation_runs AS r (id, automation_id, occurrence, status, claimed_until,
                                           started_at)
         SELECT $1, a.id, $3, 'running', $5, $4 FROM automations a
          WHERE a.id = $2 AND a.status = 'active' AND a.next_run_at <= $3
         ON CONFLICT (automation_id, manual, occurrence) DO UPDATE
            SET status = 'running', claimed_until = EXCLUDED.claimed_until,
                started_at = EXCLUDED.started_at
          WHERE r.status = 'running' AND r.claimed_until <= $4
         RETURNING r.id`,
        [randomUUID(), automationId, occurrence, now, claimUntil],
      );
      return rows[0]?.id;
    });
    if (!runId) return undefined;
    await this.#settleAbandoned(automationId, occurrence, now);
    return this.#claimed(runId);
  }

  /**
   * Claims under a lock on the automation's user, and only while no other run of that user is
   * under way: a user's chats run one at a time, so a second run would wait for the first
   * inside its own time limit (and fail, two automations at the same minute), holding a worker
   * meanwhile. It waits for a later tick instead. A run whose claim ran out does not count.
   */
  async #oneAtATime(
    automationId: string,
    now: Date,
    claim: (client: pg.PoolClient) => Promise<string | undefined>,
  ): Promise<string | undefined> {
    return withTransaction(this.#db.$client, async (client) => {
      const owner = await client.query<{ user_id: string }>(
        'SELECT user_id FROM automations WHERE id = $1',
        [automationId],
      );
      const userId = owner.rows[0]?.user_id;
      if (userId === undefined) return undefined;
      await takeUserTurn(client, 'automationRun', userId);
      const busy = await client.query(
        `SELECT 1 FROM automation_runs r JOIN automations a ON a.id = r.automation_id
          WHERE a.user_id = $1 AND r.status = 'running' AND r.claimed_until > $2 LIMIT 1`,
        [userId, now],
      );
      return busy.rowCount ? undefined : claim(client);
    });
  }

  /**
   * Earlier scheduled runs left 'running' by a runner that died, whose occurrence was passed
   * over before their claim ran out: recorded as failed (not counted towards the pause).
   */
  async #settleAbandoned(automationId: string, before: Date, now: Date): Promise<void> {
    await this.#db.$client.query(
      `UPDATE automation_runs
          SET status = 'failed', error = 'interrupted: Parley stopped during the run',
              finished_at = $3, claimed_until = NULL
        WHERE automation_id = $1 AND NOT manual AND status = 'running' AND occurrence < $2
          AND claimed_until <= $3`,
      [automationId, before, now],
    );
  }

  /** Claims a "run now" run that waits (or whose runner died). */
  async claimManual(
    automationId: string,
    occurrence: Date,
    now: Date,
    claimUntil: Date,
  ): Promise<ClaimedRun | undefined> {
    const runId = await this.#oneAtATime(automationId, now, async (client) => {
      const { rows } = await client.query<{ id: string }>(
        `UPDATE automation_runs SET status = 'running', claimed_until = $4, started_at = $3
          WHERE automation_id = $1 AND occurrence = $2 AND manual
            AND (status = 'queued' OR (status = 'running' AND claimed_until <= $3))
         RETURNING id`,
        [automationId, occurrence, now, claimUntil],
      );
      return rows[0]?.id;
    });
    return runId ? this.#claimed(runId) : undefined;
  }

  async #claimed(runId: string): Promise<ClaimedRun | undefined> {
    const { rows } = await this.#db.$client.query<{
      id: string;
      automation_id: string;
      occurrence: Date;
      manual: boolean;
      user_id: string;
      prompt: string;
      name: string;
      conversation_id: string | null;
      chat_id: string | null;
      schedule: Schedule;
      timezone: string;
    }>(
      `SELECT r.id, r.automation_id, r.occurrence, r.manual, a.user_id, a.prompt, a.name,
              a.conversation_id, u.telegram_chat_id AS chat_id, a.schedule, a.timezone
         FROM automation_runs r JOIN automations a ON a.id = r.automation_id
         LEFT JOIN users u ON u.user_id = a.user_id
        WHERE r.id = $1`,
      [runId],
    );
    const row = rows[0];
    return (
      row && {
        runId: row.id,
        automationId: row.automation_id,
        occurrence: row.occurrence,
        manual: row.manual,
        userId: row.user_id,
        prompt: row.prompt,
        name: row.name,
        conversationId: row.conversation_id,
        chatId: row.chat_id,
        schedule: row.schedule,
        timezone: row.timezone,
      }
    );
  }

  /**
   * An occurrence too late to run: recorded as skipped (once), and the automation moved on to
   * `next`, in one statement.
   */
  async skip(automationId: string, occurrence: Date, next: Date | null, now: Date): Promise<void> {
    await this.#db.$client.query(
      `WITH skipped AS (
         INSERT INTO automation_runs (id, automation_id, occurrence, status, finished_at, error,
                                      read_at)
         VALUES ($1, $2, $3, 'skipped', $5, 'more than a day late', $5)
         ON CONFLICT (automation_id, manual, occurrence) DO NOTHING
       )
       UPDATE automations
          SET next_run_at = $4,
              status = CASE WHEN $4::timestamptz IS NULL THEN 'finished' ELSE status END
        WHERE id = $2 AND status = 'active' AND next_run_at <= $3`,
      [randomUUID(), automationId, occurrence, next, now],
    );
    // The skipped occurrence itself may be one whose runner died: it is over too.
    await this.#settleAbandoned(automationId, new Date(occurrence.getTime() + 1), now);
    await this.#pruneRuns(automationId);
  }

  /**
   * Deletes the automation's settled runs beyond the newest `runsKept`, as each run settles,
   * so the history stays bounded however often it runs. Safe at any time and on any replica:
   * a run queued or running is never deleted, and an occurrence whose row is gone cannot run
   * again, since a settled run has moved `next_run_at` past it (claims need it at or before).
   * Newest is by when a run settled, not by its occurrence: a run that finishes after a later
   * occurrence was skipped meanwhile (a long answer, or waiting for the user's other run) is
   * kept, else its own finish would delete it, and with it the web client's unread mark.
   */
  async #pruneRuns(automationId: string): Promise<void> {
    await this.#db.$client.query(
      `DELETE FROM automation_runs WHERE id IN (
         SELECT id FROM automation_runs
          WHERE automation_id = $1 AND status NOT IN ('queued', 'running')
          ORDER BY finished_at DESC NULLS LAST, occurrence DESC, id OFFSET $2)`,
      [automationId, this.#runsKept],
    );
  }

  /**
   * Queues a "run now" at `now` (a millisecond after the latest run, if that was later: the
   * occurrence names the run, scheduled or not), unless a run of the automation is queued or running ('busy':
   * pressing twice would run the prompt twice); undefined when the automation is not the
   * user's. A run left 'running' by a runner that died counts when it is manual (it is taken
   * over and run again), not when it is a scheduled one (it is only settled as failed). The
   * automation's row is locked first, so two presses at once see each other's run.
   */
  async queueManual(
    userId: string,
    automationId: string,
    now: Date,
  ): Promise<'queued' | 'busy' | undefined> {
    return withTransaction(this.#db.$client, async (client) => {
      const owned = await client.query(
        'SELECT 1 FROM automations WHERE user_id = $1 AND id = $2 FOR UPDATE',
        [userId, automationId],
      );
      if (owned.rowCount === 0) return undefined;
      const { rows } = await client.query<{ id: string }>(
        `INSERT INTO automation_runs (id, automation_id, occurrence, manual, status)
         SELECT $1, $2::uuid,
                GREATEST($3, (SELECT max(r.occurrence) + interval '1 millisecond'
                                FROM automation_runs r WHERE r.automation_id = $2)),
                true, 'queued'
          WHERE NOT EXISTS (
                SELECT 1 FROM automation_runs r
                 WHERE r.automation_id = $2
                   AND (r.status = 'queued'
                        OR (r.status = 'running' AND (r.manual OR r.claimed_until > $3))))
         ON CONFLICT (automation_id, manual, occurrence) DO NOTHING
         RETURNING id`,
        [randomUUID(), automationId, now],
      );
      return rows[0] ? 'queued' : 'busy';
    });
  }

  /**
   * Settles a run and its automation in one statement: the run's outcome, the automation's
   * next occurrence (a scheduled run's, unless the schedule was changed meanwhile), its
   * failures in a row, and its pause once they reach `pauseAfter`. Returns the automation's
   * status afterwards (undefined when the run was not this runner's any more).
   */
  async finish(
    run: ClaimedRun,
    outcome: RunOutcome,
    now: Date,
  ): Promise<{ status: AutomationStatus; pausedNow: boolean } | undefined> {
    const { rows } = await this.#db.$client.query<{ status: AutomationStatus; paused: boolean }>(
      `WITH run AS (
         UPDATE automation_runs
            SET status = $2, finished_at = $3, error = $4, chat_run_id = $5, delivered_to = $6,
                claimed_until = NULL
          WHERE id = $1 AND status = 'running'
         RETURNING automation_id, manual, occurrence
       ), counted AS (
         SELECT a.id, a.status AS was,
                CASE $2 WHEN 'done' THEN 0
                        WHEN 'failed' THEN a.consecutive_failures + 1
                        ELSE a.consecutive_failures END AS failures,
                NOT run.manual AND a.next_run_at <= run.occurrence AS moves
           FROM automations a JOIN run ON a.id = run.automation_id
       )
       UPDATE automations a
          SET consecutive_failures = c.failures,
              next_run_at = CASE WHEN c.moves THEN $7 ELSE a.next_run_at END,
              status = CASE WHEN c.was = 'active' AND c.failures >= $8 THEN 'paused'
                            WHEN c.was = 'active' AND c.moves AND $7::timestamptz IS NULL
                              THEN 'finished'
                            ELSE a.status END,
              paused_reason = CASE WHEN c.was = 'active' AND c.failures >= $8 THEN $9
                                   ELSE a.paused_reason END
         FROM counted c
        WHERE a.id = c.id
       RETURNING a.status, (c.was = 'active' AND c.failures >= $8) AS paused`,
      [
        run.runId,
        outcome.status,
        now,
        outcome.error ?? null,
        outcome.chatRunId ?? null,
        outcome.deliveredTo ?? null,
        outcome.nextRunAt,
        outcome.pauseAfter,
        outcome.pauseReason,
      ],
    );
    const row = rows[0];
    if (row) await this.#pruneRuns(run.automationId);
    return row && { status: row.status, pausedNow: row.paused };
  }

  /** A run not finished (Parley stopping): due again at once, by whichever process is up. */
  async release(run: ClaimedRun, now: Date): Promise<void> {
    await this.#db.$client.query(
      `UPDATE automation_runs SET claimed_until = $2 WHERE id = $1 AND status = 'running'`,
      [run.runId, now],
    );
  }

  /**
   * Whether the run is still to be answered: 'deleted' once its automation was (its runs go
   * with it), 'paused' when a scheduled run's automation was paused since its claim ("run now"
   * runs whatever the status).
   */
  async runWanted(runId: string): Promise<'yes' | 'deleted' | 'paused'> {
    const { rows } = await this.#db.$client.query<{ wanted: boolean }>(
      `SELECT r.manual OR a.status = 'active' AS wanted
         FROM automation_runs r JOIN automations a ON a.id = r.automation_id
        WHERE r.id = $1`,
      [runId],
    );
    const row = rows[0];
    return !row ? 'deleted' : row.wanted ? 'yes' : 'paused';
  }

  /** False once the run's automation was deleted (its runs go with it). */
  async runExists(runId: string): Promise<boolean> {
    const { rowCount } = await this.#db.$client.query(
      'SELECT 1 FROM automation_runs WHERE id = $1',
      [runId],
    );
    return rowCount === 1;
  }

  /** The automation's own conversation: the one stored, or `made` if it has none yet. */
  async keepConversation(automationId: string, made: string): Promise<string> {
    const { rows } = await this.#db.$client.query<{ conversation_id: string }>(
      `UPDATE automations SET conversation_id = COALESCE(conversation_id, $2) WHERE id = $1
       RETURNING conversation_id`,
      [automationId, made],
    );
    return rows[0]?.conversation_id ?? made;
  }

  /** The automation's runs, newest first; undefined when it is not the user's. */
  async runs(
    userId: string,
    automationId: string,
    limit: number,
  ): Promise<AutomationRunRecord[] | undefined> {
    if (!(await this.get(userId, automationId))) return undefined;
    const { rows } = await this.#db.$client.query<{
      id: string;
      automation_id: string;
      occurrence: Date;
      manual: boolean;
      status: RunStatus;
      started_at: Date | null;
      finished_at: Date | null;
      chat_run_id: string | null;
      error: string | null;
      delivered_to: string | null;
      read_at: Date | null;
    }>(
      `SELECT id, automation_id, occurrence, manual, status, started_at, finished_at,
              chat_run_id, error, delivered_to, read_at
         FROM automation_runs WHERE automation_id = $1
        ORDER BY occurrence DESC, id LIMIT $2`,
      [automationId, limit],
    );
    return rows.map((row) => ({
      id: row.id,
      automationId: row.automation_id,
      occurrence: row.occurrence,
      manual: row.manual,
      status: row.status,
      startedAt: row.started_at,
      finishedAt: row.finished_at,
      chatRunId: row.chat_run_id,
      error: row.error,
      deliveredTo: row.delivered_to,
      read: row.read_at !== null,
    }));
  }

  /** Marks every settled run of the automation as seen; false when it is not the user's. */
  async markRead(userId: string, automationId: string, now: Date): Promise<boolean> {
    if (!(await this.get(userId, automationId))) return false;
    await this.#db.$client.query(
      `UPDATE automation_runs SET read_at = $2
        WHERE automation_id = $1 AND read_at IS NULL AND status IN ('done', 'failed', 'refused')`,
      [automationId, now],
    );
    return true;
  }
}

function toRecord(row: AutomationRow): AutomationRecord {
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    prompt: row.prompt,
    schedule: row.schedule,
    timezone: row.timezone,
    status: row.status,
    pausedReason: row.paused_reason,
    nextRunAt: row.next_run_at,
    consecutiveFailures: row.consecutive_failures,
    conversationId: row.conversation_id,
    createdAt: row.created_at,
    unread: row.unread,
  };
}

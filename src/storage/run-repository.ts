import { orm } from './orm.ts';

const { eq } = orm;

import type { Db } from './database.ts';
import { chatRuns } from './schema.ts';

export type RunStatus = 'running' | 'completed' | 'failed' | 'interrupted';

export interface RunOutcome {
  status: Exclude<RunStatus, 'running'>;
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  toolsUsed: string[];
  errorCode?: string | undefined;
}

export interface RunRecord {
  id: string;
  userId: string;
  model: string;
  startedAt: Date;
}

/** Chat runs: one per `POST /chat`, referenced by feedback. */
export class RunRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Records a finished run in one statement. Runs are written once, at the end, before the
   * stream's end event carries their id: a client can only send feedback for a stored run, and
   * a chat costs one round trip fewer than writing the run at its start.
   */
  async record(run: RunRecord, outcome: RunOutcome): Promise<void> {
    await this.#db
      .insert(chatRuns)
      .values({
        ...run,
        status: outcome.status,
        inputTokens: outcome.inputTokens ?? null,
        outputTokens: outcome.outputTokens ?? null,
        toolsUsed: outcome.toolsUsed,
        errorCode: outcome.errorCode ?? null,
        finishedAt: new Date(),
      })
      .onConflictDoNothing(); // a failed turn is recorded once, even if storing it is retried
  }

  async exists(runId: string): Promise<boolean> {
    const rows = await this.#db
      .select({ id: chatRuns.id })
      .from(chatRuns)
      .where(eq(chatRuns.id, runId))
      .limit(1);
    return rows.length === 1;
  }
}

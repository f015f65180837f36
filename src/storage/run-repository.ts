import { eq } from 'drizzle-orm';
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

/** Chat runs: one per `POST /chat`, referenced by feedback. */
export class RunRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async start(run: { id: string; userId: string; model: string }): Promise<void> {
    await this.#db.insert(chatRuns).values({ ...run, status: 'running' });
  }

  async finish(runId: string, outcome: RunOutcome): Promise<void> {
    await this.#db
      .update(chatRuns)
      .set({
        status: outcome.status,
        inputTokens: outcome.inputTokens ?? null,
        outputTokens: outcome.outputTokens ?? null,
        toolsUsed: outcome.toolsUsed,
        errorCode: outcome.errorCode ?? null,
        finishedAt: new Date(),
      })
      .where(eq(chatRuns.id, runId));
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

import { eq } from 'drizzle-orm';
import type { Db } from './database.ts';
import { chatRuns } from './schema.ts';

export type RunStatus = 'running' | 'completed' | 'failed' | 'interrupted';

/** Chat runs: one per `POST /chat`, referenced by feedback. */
export class RunRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
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

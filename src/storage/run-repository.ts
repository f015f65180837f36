import type { ModelMessage } from 'ai';
import type { Db } from './database.ts';
import { turnRows } from './message-repository.ts';
import { chatRuns, messages } from './schema.ts';

export interface RunOutcome {
  status: 'completed' | 'failed' | 'interrupted';
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
   * Records a finished run and its turn (the user's message and what was answered) in one
   * statement, so both are stored or neither is. Runs are written once, at the end, before the
   * stream's end event carries their id: a client can only send feedback for a stored run.
   */
  async record(run: RunRecord, outcome: RunOutcome, turn: ModelMessage[]): Promise<void> {
    const stored = this.#db.$with('stored_run').as(
      this.#db
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
        .returning({ id: chatRuns.id }),
    );
    await this.#db
      .with(stored)
      .insert(messages)
      .values(turnRows(run.userId, run.id, turn, outcome.status === 'interrupted'));
  }
}

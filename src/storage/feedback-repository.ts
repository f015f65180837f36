import { randomUUID } from 'node:crypto';
import type { Db } from './database.ts';
import { feedback } from './schema.ts';

export interface NewFeedback {
  runId: string;
  key: string;
  score: number;
  comment?: string | undefined;
}

/** Stored feedback; rows not yet forwarded to LangSmith form the forwarding outbox. */
export class FeedbackRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async insert(input: NewFeedback): Promise<string> {
    const id = randomUUID();
    await this.#db.insert(feedback).values({
      id,
      runId: input.runId,
      key: input.key,
      score: input.score,
      comment: input.comment ?? null,
    });
    return id;
  }
}

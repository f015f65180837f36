import { orm } from './orm.ts';

const { count, desc, eq, max } = orm;

import type { Db } from './database.ts';
import { graphTriples } from './schema.ts';
import { withTransaction } from './transaction.ts';
import { takeUserTurn } from './user-turns.ts';

export interface TripleRecord {
  id: number;
  subject: string;
  relation: string;
  object: string;
  createdAt: Date;
}

export interface NewTriple {
  subject: string;
  relation: string;
  object: string;
  subjectKey: string;
  relationKey: string;
  objectKey: string;
}

/** Cheap to read, changes with every insert or delete of the user's triples. */
export type GraphVersion = string;

export class GraphRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Inserts the triple unless one with the same keys exists, or the user has `max` already
   * (`full`, with how many). A model's calls of one step run together (counting first and
   * inserting after stored 4 of a limit of 2): the count and the insert in one statement, the
   * user's additions one at a time (see user-turns.ts).
   */
  async add(
    userId: string,
    triple: NewTriple,
    max: number,
  ): Promise<{ outcome: 'added' | 'known' } | { outcome: 'full'; count: number }> {
    return withTransaction(this.#db.$client, async (client) => {
      await takeUserTurn(client, 'graphAdd', userId);
      const { rows } = await client.query<{ count: string; added: boolean }>(
        `WITH counted AS (SELECT count(*) AS count FROM graph_triples WHERE user_id = $1),
              added AS (
                INSERT INTO graph_triples
                       (user_id, subject, relation, object, subject_key, relation_key, object_key)
                SELECT $1, $2, $3, $4, $5, $6, $7 FROM counted WHERE counted.count < $8
                ON CONFLICT DO NOTHING
                RETURNING id)
         SELECT (SELECT count FROM counted) AS count, EXISTS (SELECT 1 FROM added) AS added`,
        [
          userId,
          triple.subject,
          triple.relation,
          triple.object,
          triple.subjectKey,
          triple.relationKey,
          triple.objectKey,
          max,
        ],
      );
      const row = rows[0];
      const stored = Number(row?.count ?? 0);
      if (row?.added) return { outcome: 'added' as const };
      return stored >= max
        ? { outcome: 'full' as const, count: stored }
        : { outcome: 'known' as const };
    });
  }

  /** The user's triples, newest first. */
  async list(userId: string): Promise<TripleRecord[]> {
    return this.#db
      .select({
        id: graphTriples.id,
        subject: graphTriples.subject,
        relation: graphTriples.relation,
        object: graphTriples.object,
        createdAt: graphTriples.createdAt,
      })
      .from(graphTriples)
      .where(eq(graphTriples.userId, userId))
      .orderBy(desc(graphTriples.id));
  }

  /** (count, max id) from the (user_id, id) index: the cache's validity check. */
  async version(userId: string): Promise<{ version: GraphVersion; count: number }> {
    const [row] = await this.#db
      .select({ count: count(), maxId: max(graphTriples.id) })
      .from(graphTriples)
      .where(eq(graphTriples.userId, userId));
    const total = Number(row?.count ?? 0);
    return { version: `${total}:${row?.maxId ?? 0}`, count: total };
  }

  async clear(userId: string): Promise<number> {
    const rows = await this.#db
      .delete(graphTriples)
      .where(eq(graphTriples.userId, userId))
      .returning({ id: graphTriples.id });
    return rows.length;
  }
}

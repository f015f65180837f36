import { orm } from './orm.ts';

const { count, desc, eq, max } = orm;

import type { Db } from './database.ts';
import { graphTriples } from './schema.ts';

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

  /** Inserts the triple unless one with the same keys exists; true when it was new. */
  async add(userId: string, triple: NewTriple): Promise<boolean> {
    const rows = await this.#db
      .insert(graphTriples)
      .values({ userId, ...triple })
      .onConflictDoNothing()
      .returning({ id: graphTriples.id });
    return rows.length > 0;
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

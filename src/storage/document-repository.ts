import { orm } from './orm.ts';

const { and, asc, eq } = orm;

import type { Db } from './database.ts';
import { documents } from './schema.ts';

/** Ingested sources and their chunks. Uploaded documents are shared by all users. */
export class DocumentRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async listSources(): Promise<string[]> {
    const rows = await this.#db
      .select({ source: documents.source })
      .from(documents)
      .where(eq(documents.kind, 'document'))
      .orderBy(asc(documents.source));
    return rows.map((row) => row.source);
  }

  /**
   * Deletes an uploaded source. Its chunks go with it through the foreign key's ON DELETE
   * CASCADE, inside this one statement, so a reader never sees a half-deleted document.
   * Returns false for an unknown source.
   */
  async deleteSource(source: string): Promise<boolean> {
    const removed = await this.#db
      .delete(documents)
      .where(and(eq(documents.source, source), eq(documents.kind, 'document')))
      .returning({ source: documents.source });
    return removed.length > 0;
  }
}

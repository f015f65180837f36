import pino from 'pino';
import { parseConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/storage/database.ts';
import {
  chatRuns,
  chunks,
  documents,
  reminderNotices,
  reminders,
} from '../../src/storage/schema.ts';

const SEED_CONFIG = parseConfig({ DB_POOL_MAX: '2' });

/**
 * Puts rows in place before the server starts, through the real storage layer on the real
 * engine (the embedded one is locked while a server runs). Used for data that arrives through
 * endpoints of later features (ingestion, chat runs, the reminder scheduler).
 */
export interface Seed {
  documents?: { source: string; chunks: string[] }[];
  runs?: { id: string; userId: string }[];
  reminders?: {
    id: string;
    userId: string;
    title: string;
    dueOn: string;
    noticesSent?: number[];
  }[];
}

export async function seed(
  target: { dataDir: string; databaseUrl?: string | undefined },
  data: Seed,
): Promise<void> {
  const database = await openDatabase(
    { ...SEED_CONFIG, DATA_DIR: target.dataDir, DATABASE_URL: target.databaseUrl },
    pino({ level: 'silent' }),
  );
  try {
    const { db } = database;
    for (const document of data.documents ?? []) {
      await db
        .insert(documents)
        .values({ source: document.source, chunkCount: document.chunks.length });
      if (document.chunks.length > 0) {
        await db.insert(chunks).values(
          document.chunks.map((content, chunkIndex) => ({
            source: document.source,
            chunkIndex,
            content,
          })),
        );
      }
    }
    for (const run of data.runs ?? []) {
      await db.insert(chatRuns).values({ id: run.id, userId: run.userId, status: 'completed' });
    }
    for (const reminder of data.reminders ?? []) {
      await db.insert(reminders).values(reminder);
      for (const daysBefore of reminder.noticesSent ?? []) {
        await db
          .insert(reminderNotices)
          .values({ reminderId: reminder.id, daysBefore, sentAt: new Date() });
      }
    }
  } finally {
    await database.close();
  }
}

/** Runs a query against the same store (server stopped, for the embedded engine). */
export async function query<T>(
  target: { dataDir: string; databaseUrl?: string | undefined },
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const database = await openDatabase(
    { ...SEED_CONFIG, DATA_DIR: target.dataDir, DATABASE_URL: target.databaseUrl },
    pino({ level: 'silent' }),
  );
  try {
    const { rows } = await database.db.$client.query(sql, params);
    return rows as T[];
  } finally {
    await database.close();
  }
}

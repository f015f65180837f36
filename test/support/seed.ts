import pino from 'pino';
import { parseConfig } from '../../src/config.ts';
import { DocumentService } from '../../src/documents/document-service.ts';
import type { ExtractedPage, IngestInput } from '../../src/documents/extracted-document.ts';
import { GraphService } from '../../src/graph/graph-service.ts';
import { openDatabase } from '../../src/storage/database.ts';
import { DocumentRepository } from '../../src/storage/document-repository.ts';
import { GraphRepository } from '../../src/storage/graph-repository.ts';
import { chatRuns, ingestUsage, reminderNotices, reminders } from '../../src/storage/schema.ts';

const SEED_CONFIG = parseConfig({ DB_POOL_MAX: '2' });

/**
 * Puts rows in place before the server starts, through the real storage layer on the real
 * engine (the embedded one is locked while a server runs). Used for data that arrives through
 * endpoints of later features (ingestion, chat runs, the reminder scheduler).
 */
export interface Seed {
  /**
   * Stored through the real DocumentService, as POST /ingest stores them: `chunks` become
   * paragraphs of one text, `pages` are taken as extracted. With `userId`, the source belongs
   * to that user (a conversation memory) instead of being shared.
   */
  documents?: { source: string; chunks?: string[]; pages?: ExtractedPage[]; userId?: string }[];
  /** Completed chat runs; `startedAt` and the token counts let a test place usage in time. */
  runs?: {
    id: string;
    userId: string;
    startedAt?: Date;
    inputTokens?: number;
    outputTokens?: number;
  }[];
  /** Bytes uploaded for ingestion on a day (YYYY-MM-DD) of the user's timezone. */
  ingestUsage?: { userId: string; day: string; bytes: number }[];
  reminders?: {
    id: string;
    userId: string;
    title: string;
    dueOn: string;
    noticesSent?: number[];
  }[];
  /** Knowledge graph relations, stored through the real GraphService as the assistant stores them. */
  triples?: { userId: string; subject: string; relation: string; object: string }[];
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
    const service = new DocumentService({
      documents: new DocumentRepository(db),
      chunking: { maxTokens: 256, overlapTokens: 32 },
      logger: pino({ level: 'silent' }),
      verbose: false,
    });
    for (const document of data.documents ?? []) {
      const pages = document.pages ?? [{ page: null, text: (document.chunks ?? []).join('\n\n') }];
      const input: IngestInput = {
        source: document.source,
        filename: document.source.split('/').at(-1) ?? document.source,
        contentType: 'text/plain',
        bytes: pages.reduce((sum, page) => sum + Buffer.byteLength(page.text), 0),
        document: {
          kind: pages.some((page) => page.page !== null) ? 'pdf' : 'text',
          pages,
          ocrPages: [],
        },
      };
      if (document.userId) await service.ingestForUser(document.userId, input);
      else await service.ingest(input);
    }
    for (const run of data.runs ?? []) {
      await db.insert(chatRuns).values({
        id: run.id,
        userId: run.userId,
        status: 'completed',
        ...(run.startedAt ? { startedAt: run.startedAt, finishedAt: run.startedAt } : {}),
        inputTokens: run.inputTokens ?? null,
        outputTokens: run.outputTokens ?? null,
      });
    }
    for (const usage of data.ingestUsage ?? []) {
      await db.insert(ingestUsage).values(usage);
    }
    for (const reminder of data.reminders ?? []) {
      await db.insert(reminders).values(reminder);
      for (const daysBefore of reminder.noticesSent ?? []) {
        await db
          .insert(reminderNotices)
          .values({ reminderId: reminder.id, daysBefore, sentAt: new Date() });
      }
    }
    const graph = new GraphService(new GraphRepository(db), { maxTriples: 1_000, cacheUsers: 1 });
    for (const { userId, ...triple } of data.triples ?? []) await graph.add(userId, triple);
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

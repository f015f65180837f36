/**
 * A process that starts writing a large new version of a source (`handbook.txt`) and is killed
 * in the middle: the new version's chunks stay hidden, as they are while a write is under way.
 *   node replace-child.ts <dataDir> [databaseUrl]
 * It prints `writing` as the write begins. One chunk a transaction (INGEST_BATCH_CHUNKS=1)
 * makes that write take seconds.
 */
import { openDocumentService, textDocument } from './document-store.ts';

/** The new version: thousands of short chunks about the lantern, each stronger than the old. */
export const newVersion = () =>
  Array.from({ length: 3_000 }, (_, i) => `Lantern lantern note ${i}: the lantern lantern.`);

const [dataDir, databaseUrl] = process.argv.slice(2);
if (dataDir !== undefined) {
  const batch = process.env.INGEST_BATCH_CHUNKS;
  const { service } = await openDocumentService({
    dataDir,
    databaseUrl,
    batchChunks: batch ? Number(batch) : undefined,
  });
  process.stdout.write('writing\n');
  await service.ingest(textDocument('handbook.txt', newVersion()));
  process.stdout.write('new stored\n');
}

/**
 * A process that ingests documents one after another until it is killed: the crash test
 * kills it (SIGKILL) in the middle of one and checks that no partial document remains.
 *   node ingest-child.ts <dataDir> [databaseUrl]
 * INGEST_BATCH_CHUNKS makes a large document's write take more, smaller transactions, so a
 * kill lands in the middle of one.
 */
import { openDocumentService, textDocument } from './document-store.ts';

const [dataDir, databaseUrl] = process.argv.slice(2);
const batch = process.env.INGEST_BATCH_CHUNKS;
const { service } = await openDocumentService({
  dataDir: dataDir as string,
  databaseUrl,
  batchChunks: batch ? Number(batch) : undefined,
});
const paragraphs = Array.from(
  { length: 3_000 },
  (_, i) => `Paragraph ${i} about crash safety, transactions and durable storage number ${i}.`,
);
for (let n = 0; ; n++) {
  const { chunks } = await service.ingest(textDocument(`crash/${n % 3}.txt`, paragraphs));
  process.stdout.write(`stored ${n} chunks=${chunks}\n`);
}

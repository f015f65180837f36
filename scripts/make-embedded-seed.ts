/**
 * Makes the embedded database's seed for the installed PGlite (see
 * src/storage/embedded-seed.ts): creates an empty database with initdb, dumps its data
 * directory, and writes it brotli-compressed next to the loader. Run it after changing the
 * PGlite pin (a test fails until the seed for the pinned version exists):
 *
 *   node scripts/make-embedded-seed.ts
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, constants } from 'node:zlib';
import { PGlite } from '@electric-sql/pglite';
import { pgliteVersion, SEED_DIR, seedFile } from '../src/storage/embedded-seed.ts';

const dir = mkdtempSync(join(tmpdir(), 'parley-seed-'));
try {
  const db = await PGlite.create(join(dir, 'pg'));
  const tar = new Uint8Array(await (await db.dumpDataDir('none')).arrayBuffer());
  await db.close();
  const compressed = brotliCompressSync(tar, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 11,
      [constants.BROTLI_PARAM_LGWIN]: 24,
      [constants.BROTLI_PARAM_SIZE_HINT]: tar.length,
    },
  });
  // One seed at a time: older versions' files are of no use to the pinned PGlite.
  for (const name of readdirSync(SEED_DIR)) {
    if (name.endsWith('.tar.br')) rmSync(new URL(name, SEED_DIR));
  }
  writeFileSync(seedFile(), compressed);
  console.log(
    `PGlite ${pgliteVersion()}: ${tar.length} bytes of data directory -> ${compressed.length} bytes (${seedFile().pathname})`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}

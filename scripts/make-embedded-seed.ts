/**
 * Makes the embedded database's seed for the installed PGlite and this checkout's migrations
 * (see src/storage/embedded-seed.ts): opens a new data directory the way Parley does (its
 * migrations applied), closes it, and writes its files as a brotli-compressed tar next to the
 * loader. Run it after changing the PGlite pin or adding a migration (a test fails until
 * the seed matches both):
 *
 *   node scripts/make-embedded-seed.ts
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, constants } from 'node:zlib';
import { pino } from 'pino';
import { c as createTar } from 'tar';
import { openDatabase } from '../src/storage/database.ts';
import { pgliteVersion, SEED_DIR, seedFile } from '../src/storage/embedded-seed.ts';

const dir = mkdtempSync(join(tmpdir(), 'parley-seed-'));
try {
  // A seed already there for this PGlite is used and brought up to date by the migrations;
  // without one, initdb makes the database.
  const database = await openDatabase(
    {
      DATA_DIR: dir,
      DATABASE_URL: undefined,
      DB_POOL_MAX: 1,
      DB_POOL_WAIT_MS: 60_000,
      DB_REPLY_TIMEOUT_MS: 60_000,
      EMBEDDED_DB_SHARED_BUFFERS: '16MB',
    },
    pino({ level: 'warn' }),
  );
  await database.close();
  const pgDir = join(dir, 'pg');
  const pieces: Buffer[] = [];
  for await (const piece of createTar({ cwd: pgDir, portable: true }, readdirSync(pgDir))) {
    pieces.push(piece as Buffer);
  }
  const tar = Buffer.concat(pieces);
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

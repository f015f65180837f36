import { createReadStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress } from 'node:zlib';
import { x as extractTar } from 'tar';

/**
 * A new embedded database as Parley's first start leaves it (initdb's output with every
 * migration applied), shipped with Parley: a brotli-compressed tar of the data directory made
 * by scripts/make-embedded-seed.ts.
 *
 * Creating a database with initdb takes PGlite ~1 GB of memory for a moment (three WASM
 * instances: initdb, the backend it drives, and the engine the result is copied into), and
 * applying the migrations grows the engine's WASM memory by ~240 MB that it never gives back
 * (loading pgvector, building the catalog). Unpacking the seed's files into place needs no
 * PGlite at all, so a new data directory costs what reopening an existing one costs.
 *
 * A seed is only good for the PGlite it was made with: the file is named by that version,
 * and when the installed PGlite has none, the database is created with initdb as before. A
 * seed older than the migrations is still correct (the missing ones are applied at start,
 * as on any upgrade); a test fails until it is made again.
 */
export const SEED_DIR = new URL('./embedded-seed/', import.meta.url);

/** The installed PGlite's version (its package.json is not exported: found beside its entry). */
export function pgliteVersion(): string {
  const manifest = new URL('../package.json', import.meta.resolve('@electric-sql/pglite'));
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

export function seedFile(version = pgliteVersion()): URL {
  return new URL(`pgdata-pglite-${version}.tar.br`, SEED_DIR);
}

export function hasSeed(): boolean {
  return existsSync(seedFile());
}

/**
 * Makes `pgDataDir` from the seed: unpacked beside it and moved into place once complete, so
 * a process killed meanwhile leaves nothing that looks like a database (a half-made
 * `.creating` directory is replaced by the next start). Streams: the unpacked 40 MB are never
 * held in memory.
 */
export async function createDataDirFromSeed(pgDataDir: string): Promise<void> {
  const creating = `${pgDataDir}.creating`;
  rmSync(creating, { recursive: true, force: true });
  // PostgreSQL refuses a data directory that others can read.
  mkdirSync(creating, { mode: 0o700 });
  const problems: string[] = [];
  await pipeline(
    createReadStream(seedFile()),
    createBrotliDecompress(),
    extractTar({
      cwd: creating,
      // The seed's entries are absolute (`/PG_VERSION`): tar says so (TAR_ENTRY_INFO) as it
      // makes them relative to `cwd`. Anything else (a file that could not be written) fails.
      onwarn: (code, message) => {
        if (code !== 'TAR_ENTRY_INFO') problems.push(`${code}: ${message}`);
      },
    }),
  );
  if (problems.length > 0) throw new Error(`the database seed did not unpack: ${problems[0]}`);
  renameSync(creating, pgDataDir);
}

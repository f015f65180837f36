import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { brotliDecompress } from 'node:zlib';

/**
 * A freshly created, empty PGlite database, shipped with Parley (made by
 * scripts/make-embedded-seed.ts, a brotli-compressed tar of the data directory).
 *
 * Creating a database with initdb takes PGlite ~1 GB of memory for a moment (three WASM
 * instances: initdb, the backend it drives, and the engine the result is copied into); a
 * data directory loaded from this tarball peaks at ~260 MB. The seed only holds what initdb
 * writes: Parley's schema comes from its migrations as on any other start.
 *
 * A seed is only good for the PGlite it was made with: the file is named by that version,
 * and when the installed PGlite has none, the database is created with initdb as before.
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

/** The seed's tar for the installed PGlite, or undefined when there is none. */
export async function readSeed(): Promise<Uint8Array | undefined> {
  const file = seedFile();
  if (!existsSync(file)) return undefined;
  return promisify(brotliDecompress)(await readFile(file));
}

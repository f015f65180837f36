import type { PGliteOptions } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';

/** How Parley opens its embedded database (also what the shipped seed was made with). */
export function pgliteOptions(sharedBuffers: string): PGliteOptions {
  return {
    extensions: { vector },
    // Postgres' default 128MB of shared buffers lives in PGlite's WASM memory and is never
    // given back; 16MB cut the process's resident memory by ~125MB (the OS still caches
    // the data files). PGlite writes this as the whole of postgresql.conf.
    postgresqlconf: [`shared_buffers = ${sharedBuffers}`],
  };
}

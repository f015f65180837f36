import { totalmem } from 'node:os';

/**
 * `EMBEDDED_DB_SHARED_BUFFERS=auto` (the default): the embedded engine's shared buffers are
 * sized at start to hold its vector indexes, within bounds. A vector search walks its HNSW
 * graph page by page; pages not in shared buffers are read through PGlite's file layer, one
 * system call and one copy into WASM memory each, and that was most of a search's time. At
 * 100,000 chunks (a ~200 MB index) 16MB of buffers read 71 % of a query's pages, `auto` 5 %:
 * vector search p50 30–46 → 11–12 ms, hybrid search p50 43–49 → 23–24 ms (bench/RESULTS.md,
 * issue 30).
 * Memory is the price, so a small store keeps the floor.
 */
export const AUTO = 'auto';

const MB = 1024 * 1024;

/** What a store with no (or small) vector indexes gets: memory kept for good is small. */
export const AUTO_FLOOR = '16MB';
const AUTO_FLOOR_BYTES = 16 * MB;

/** The most `auto` gives: the setting's own upper bound (PGlite's 32-bit WASM memory). */
const AUTO_CEILING_BYTES = 1024 * MB;

/** Room over the indexes' size: the chunks' pages an owner's check reads, and growth. */
const HEADROOM = 1.25;

/**
 * The shared buffers `auto` gives a store whose vector indexes take `indexBytes`: those and
 * some room, at least the floor (16MB), at most an eighth of the machine's memory and 1GB.
 * Whole MB, as Postgres reads it (`256MB`).
 */
export function autoSharedBuffers(indexBytes: number, machineBytes = totalmem()): string {
  const ceiling = Math.max(
    AUTO_FLOOR_BYTES,
    Math.min(AUTO_CEILING_BYTES, Math.floor(machineBytes / 8)),
  );
  const wanted = Math.min(Math.max(indexBytes * HEADROOM, AUTO_FLOOR_BYTES), ceiling);
  return `${Math.floor(wanted / MB)}MB`;
}

/** Bytes of a size Postgres reads (`16MB`, `512kB`, `1GB`); undefined for anything else. */
export function sizeBytes(value: string): number | undefined {
  const size = /^(\d{1,10})(kB|MB|GB)$/.exec(value);
  if (!size) return undefined;
  return Number(size[1]) * { kB: 1024, MB, GB: 1024 * MB }[size[2] as 'kB' | 'MB' | 'GB'];
}

/** The size of every HNSW and IVFFlat index in the database, in bytes. */
export const VECTOR_INDEX_BYTES_SQL = `
  select coalesce(sum(pg_relation_size(c.oid)), 0)::float8 as bytes
    from pg_class c join pg_am a on a.oid = c.relam
   where c.relkind = 'i' and a.amname in ('hnsw', 'ivfflat')`;

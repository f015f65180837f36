import { createRequire } from 'node:module';

/**
 * Drizzle, loaded through its CommonJS build. Node's ESM loader links drizzle-orm's ESM build
 * (hundreds of small modules joined by `export *`) slowly and wastefully: importing
 * `drizzle-orm/pg-core` took ~480 ms and ~160 MB of heap, against ~70 ms and ~10 MB for the
 * CommonJS build, and the process kept the resident memory afterwards (measured on Node
 * 24.21). Everything in Parley takes Drizzle from here, so only one copy is ever loaded.
 */
const require = createRequire(import.meta.url);

export const orm = require('drizzle-orm') as typeof import('drizzle-orm');
export const pgCore = require('drizzle-orm/pg-core') as typeof import('drizzle-orm/pg-core');
export const nodePostgres =
  require('drizzle-orm/node-postgres') as typeof import('drizzle-orm/node-postgres');
export const migrator =
  require('drizzle-orm/node-postgres/migrator') as typeof import('drizzle-orm/node-postgres/migrator');

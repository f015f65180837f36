import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createDataDirFromSeed,
  hasSeed,
  pgliteVersion,
  seedFile,
} from '../../src/storage/embedded-seed.ts';
import { pgliteOptions } from '../../src/storage/pglite-options.ts';
import { startParley } from '../support/start-parley.ts';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-seed-test-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** What initdb decides about a new database, read back from a running engine. */
async function describeDatabase(db: PGlite) {
  const one = async (sql: string) => (await db.query<Record<string, unknown>>(sql)).rows;
  return {
    version: await one('SHOW server_version'),
    catalog: await one('SELECT catalog_version_no FROM pg_control_system()'),
    encoding: await one(
      'SELECT pg_encoding_to_char(encoding) AS e, datcollate FROM pg_database ORDER BY datname',
    ),
    databases: await one('SELECT datname FROM pg_database ORDER BY datname'),
    roles: await one('SELECT rolname, rolsuper FROM pg_roles ORDER BY rolname'),
    schemas: await one('SELECT nspname FROM pg_namespace ORDER BY nspname'),
    relations: await one('SELECT count(*)::int AS n FROM pg_class'),
    settings: await one(
      "SELECT name, setting FROM pg_settings WHERE name IN ('lc_messages', 'TimeZone', 'DateStyle', 'default_text_search_config', 'shared_buffers') ORDER BY name",
    ),
    extensions: await one('SELECT extname, extversion FROM pg_extension ORDER BY extname'),
    columns: await one(
      `SELECT table_schema, table_name, column_name, data_type, is_nullable, column_default
       FROM information_schema.columns WHERE table_schema IN ('public', 'drizzle')
       ORDER BY table_schema, table_name, ordinal_position`,
    ),
    indexes: await one(
      `SELECT schemaname, indexname, indexdef FROM pg_indexes
       WHERE schemaname IN ('public', 'drizzle') ORDER BY schemaname, indexname`,
    ),
    migrations: await one('SELECT hash FROM drizzle.__drizzle_migrations ORDER BY created_at'),
  };
}

const MIGRATIONS = 'src/storage/migrations';
const OPTIONS = pgliteOptions('16MB');

/**
 * The embedded engine creates a new database from a seed shipped with Parley (initdb's output,
 * made by scripts/make-embedded-seed.ts) because initdb itself needs ~1 GB of memory.
 */
describe('the embedded database seed', () => {
  it('exists for the PGlite version the project pins (rerun the script after changing it)', async () => {
    const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(manifest.dependencies['@electric-sql/pglite']).toBe(pgliteVersion());
    expect(seedFile().pathname).toContain(`pglite-${pgliteVersion()}`);
    expect(hasSeed()).toBe(true);
  });

  it("is the database initdb and this checkout's migrations make (rerun the script after adding one)", async () => {
    const seededDir = join(tempDir(), 'pg');
    await createDataDirFromSeed(seededDir);
    // Opened as a database that exists: PGlite neither runs initdb nor loads a tarball.
    const seeded = await PGlite.create(seededDir, OPTIONS);
    const fromSeed = await describeDatabase(seeded);
    await seeded.close();

    // The long way, independent of Parley's start-up code: initdb, then Drizzle's migrator.
    const created = await PGlite.create(join(tempDir(), 'pg'), OPTIONS);
    await migrate(drizzle({ client: created }), { migrationsFolder: MIGRATIONS });
    const fromInitdb = await describeDatabase(created);
    await created.close();

    expect(fromSeed.migrations).toEqual(
      readMigrationFiles({ migrationsFolder: MIGRATIONS }).map(({ hash }) => ({ hash })),
    );
    expect(fromSeed).toEqual(fromInitdb);
  });

  it('starts Parley on a new data directory, also over a creation a killed process left', async () => {
    const dataDir = tempDir();
    // What a process killed while creating the database leaves: a half-made directory.
    mkdirSync(join(dataDir, 'pg.creating'), { recursive: true });
    writeFileSync(join(dataDir, 'pg.creating', 'PG_VERSION'), 'half');
    // Made by this start from the seed, not copied from the test run's template.
    const first = await startParley({ dataDir, freshDataDir: true });
    const health = await first.fetch('/health');
    expect(await health.json()).toMatchObject({ status: 'ok', database: 'ok' });
    const put = await first.fetch('/users/seeded/profile', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ display_name: 'Seeded' }),
    });
    expect(put.status).toBe(200);
    expect(await first.stop()).toBe(0);

    const second = await startParley({ dataDir });
    const profile = await (await second.fetch('/users/seeded/profile')).json();
    expect(profile).toMatchObject({ display_name: 'Seeded' });
    await second.stop();
  });
});

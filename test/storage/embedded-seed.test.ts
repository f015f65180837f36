import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, describe, expect, it } from 'vitest';
import { pgliteVersion, readSeed, seedFile } from '../../src/storage/embedded-seed.ts';
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
      "SELECT name, setting FROM pg_settings WHERE name IN ('lc_messages', 'TimeZone', 'DateStyle', 'default_text_search_config') ORDER BY name",
    ),
  };
}

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
    expect(await readSeed()).toBeInstanceOf(Uint8Array);
  });

  it('is the database initdb makes with the installed PGlite', async () => {
    const seed = await readSeed();
    const seeded = await PGlite.create(join(tempDir(), 'pg'), {
      loadDataDir: new Blob([seed as Uint8Array]),
    });
    const fromSeed = await describeDatabase(seeded);
    await seeded.close();
    const created = await PGlite.create(join(tempDir(), 'pg'));
    const fromInitdb = await describeDatabase(created);
    await created.close();
    expect(fromSeed).toEqual(fromInitdb);
  });

  it('starts Parley on a new data directory, also over a creation a killed process left', async () => {
    const dataDir = tempDir();
    // What a process killed while creating the database leaves: a half-made directory.
    mkdirSync(join(dataDir, 'pg.creating'), { recursive: true });
    writeFileSync(join(dataDir, 'pg.creating', 'PG_VERSION'), 'half');
    const first = await startParley({ dataDir });
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

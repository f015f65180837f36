import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * A fresh database on the PostgreSQL server that runs on this machine, dropped afterwards.
 * The server must be running: storage tests against it fail, never skip, when it is not.
 */
const ADMIN_URL =
  process.env.PARLEY_TEST_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A role that owns its databases but is no superuser: pgvector is not a trusted extension, so
 * it may not create it, and a database of its own is a server without pgvector to Parley
 * (the server on this machine has pgvector installed).
 */
const ROLE_WITHOUT_PGVECTOR = 'parley_no_pgvector';

export interface TestDatabaseOptions {
  /** false: Parley connects as a role that may not create the `vector` extension. */
  pgvector?: boolean;
  /** The database's own DateStyle (e.g. 'SQL, DMY'), as an operator may have set it. */
  datestyle?: string;
  /**
   * The database's collation, as production databases are often created: 'icu:en-US' (ICU
   * provider) or a libc locale name. Default: PARLEY_TEST_PG_LOCALE, else the server's (C.UTF-8
   * on this machine).
   */
  locale?: string;
}

/** The CREATE DATABASE clause that gives a database the collation `locale` names. */
function localeClause(locale: string | undefined): string {
  if (!locale) return '';
  if (!/^[A-Za-z0-9_.:@=-]+$/.test(locale)) throw new Error(`unusable test locale ${locale}`);
  if (locale.startsWith('icu:')) {
    return ` LOCALE_PROVIDER icu ICU_LOCALE '${locale.slice(4)}' LOCALE 'C.UTF-8' TEMPLATE template0`;
  }
  return ` LOCALE '${locale}' TEMPLATE template0`;
}

export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const name = `parley_test_${randomBytes(6).toString('hex')}`;
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const locale = localeClause(options.locale ?? process.env.PARLEY_TEST_PG_LOCALE);
  if (options.pgvector === false) {
    // Two suites may create the role at once: either error means it exists.
    await admin(
      `DO $$ BEGIN CREATE ROLE ${ROLE_WITHOUT_PGVECTOR} LOGIN NOSUPERUSER;
       EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
    );
    await admin(`CREATE DATABASE ${name} OWNER ${ROLE_WITHOUT_PGVECTOR}${locale}`);
    url.username = ROLE_WITHOUT_PGVECTOR;
  } else {
    await admin(`CREATE DATABASE ${name}${locale}`);
  }
  if (options.datestyle) {
    await admin(`ALTER DATABASE ${name} SET datestyle = '${options.datestyle}'`);
  }
  return {
    url: url.toString(),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

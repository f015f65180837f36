import type { Socket } from 'node:net';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { poolWaitTimeout } from './database-errors.ts';
import { startEmbeddedEngine } from './embedded-engine.ts';
import { migrator, nodePostgres } from './orm.ts';
import { PriorityPool } from './priority-pool.ts';
import * as schema from './schema.ts';
import {
  ownedStartupSerializer,
  type StartupSerializer,
  serverStartupSerializer,
} from './startup-lock.ts';

const { drizzle } = nodePostgres;
const { migrate } = migrator;

export type Db = NodePgDatabase<typeof schema> & { $client: PriorityPool };

export type DatabaseState = 'ok' | 'busy' | 'unreachable';

export interface Database {
  readonly db: Db;
  readonly engine: 'embedded' | 'server';
  readonly capabilities: { readonly vector: boolean };
  /**
   * Runs start-up work that creates schema objects (a library's tables, queues) while no other
   * replica on the same database runs its own; the migrations already ran this way.
   */
  readonly serializeStartup: StartupSerializer;
  /**
   * The embedded engine only: copies the data directory, consistent, to `path` (new, on the
   * same disk) while serving; resolves with how long the engine was held, in ms. A PostgreSQL
   * server has pg_dump.
   */
  readonly copyDataDir: ((path: string) => Promise<number>) | undefined;
  /**
   * `ok` when the database answers a trivial query within the timeout; `busy` when that query
   * is still waiting for a pooled connection, every one in use (the database answers them);
   * `unreachable` otherwise.
   */
  check(timeoutMs?: number): Promise<DatabaseState>;
  close(): Promise<void>;
}

const MIGRATIONS_FOLDER = new URL('./migrations', import.meta.url).pathname;

/** Longest opening a connection to a PostgreSQL server may take before it counts as down. */
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * A connection to a PostgreSQL server. pg-pool gives new clients its own wait limit; opening
 * one gets the shorter one. And it gives up on a reply that does not come: after a failover
 * or a network partition the old connections are neither answered nor closed (the OS may
 * notice after a quarter of an hour, or never), and every request that drew one waited for
 * good. While a query is under way and the server has sent nothing for `replyTimeoutMs`, the
 * connection is destroyed: the query fails as "database unavailable" (503), the pool drops
 * the connection, and the next query opens a new one. A `patient` client (migrations, the
 * start-up turn: an index build, another replica's migrations) may wait in silence.
 */
export class ServerClient extends pg.Client {
  patient = false;
  readonly #stream: Socket;

  constructor(
    config: pg.ClientConfig & {
      replyTimeoutMs?: number;
      /** Holds the connection from its creation until its socket has closed. */
      openClients?: Set<ServerClient>;
    } = {},
  ) {
    super({ ...config, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    const stream = (this as unknown as { connection: { stream: Socket } }).connection.stream;
    this.#stream = stream;
    const open = config.openClients;
    if (open) {
      open.add(this);
      this.once('end', () => open.delete(this));
    }
    const replyTimeoutMs = config.replyTimeoutMs;
    if (!replyTimeoutMs) return;
    // pg's own query_timeout fails the query but keeps the connection, whose reply may still
    // come (and then answers the next query): the socket is what has to go.
    stream.setTimeout(replyTimeoutMs);
    stream.on('timeout', () => {
      if (this.patient || !this.#waiting()) return;
      const error = Object.assign(
        new Error(`The database server sent nothing for ${replyTimeoutMs} ms`),
        { code: 'ETIMEDOUT' },
      );
      stream.destroy(error);
    });
  }

  /**
   * Closes the connection; one the server has not closed within `waitMs` (a failover, a
   * partition: the goodbye is never answered, and the socket would keep the process alive) is
   * destroyed. Resolves with whether it had to be.
   */
  async endWithin(waitMs: number): Promise<'closed' | 'cut'> {
    const ended = this.end().catch(() => {});
    if (await settlesWithin(ended, waitMs)) return 'closed';
    this.cut();
    return 'cut';
  }

  /**
   * Destroys the connection now, as closed by this process: its queries under way fail
   * ("Connection terminated"), and no 'error' is emitted.
   */
  cut(): void {
    // One still being opened fails as a connect does (its caller gets the error): after end(),
    // pg would call its connect back never, and a query waiting for it would wait for good.
    if ((this as unknown as { _connected: boolean })._connected) this.end().catch(() => {});
    this.#stream.destroy();
  }

  /** A query sent and not yet answered (pg keeps it as `_activeQuery`). */
  #waiting(): boolean {
    return Boolean((this as unknown as { _activeQuery?: unknown })._activeQuery);
  }
}

/**
 * Opens the embedded engine (PGlite in DATA_DIR) or, when DATABASE_URL is set, a pool on a
 * PostgreSQL server; then applies migrations. Both are reached through `pg` and one Drizzle
 * schema, so everything above this file is engine-agnostic.
 */
export async function openDatabase(
  config: Pick<
    Config,
    | 'DATA_DIR'
    | 'DATABASE_URL'
    | 'DB_POOL_MAX'
    | 'DB_POOL_WAIT_MS'
    | 'DB_REPLY_TIMEOUT_MS'
    | 'EMBEDDED_DB_SHARED_BUFFERS'
  >,
  logger: Logger,
): Promise<Database> {
  const embedded = config.DATABASE_URL
    ? undefined
    : await startEmbeddedEngine(config.DATA_DIR, config.EMBEDDED_DB_SHARED_BUFFERS);
  /** The server engine's connections whose sockets are open (in use, idle, being opened). */
  const openClients = new Set<ServerClient>();
  const pool = new PriorityPool({
    ...(embedded
      ? // PGlite serves one connection at a time, so under load queries queue for it.
        { ...embedded.connection, max: 1 }
      : {
          connectionString: config.DATABASE_URL,
          max: config.DB_POOL_MAX,
          Client: ServerClient,
          replyTimeoutMs: config.DB_REPLY_TIMEOUT_MS,
          openClients,
          // pg reads timestamps in the ISO DateStyle only: on a server or database set to
          // another ('SQL, DMY', 'German') every date read back was null. pg-pool waits for
          // this before handing the connection out (a 'connect' listener's query raced the
          // first query, which pg deprecates and pg@9 refuses); if it fails, the connection
          // is closed and the query that wanted it gets the error, never the process.
          onConnect: (client: pg.ClientBase) => client.query('SET DateStyle = ISO'),
        }),
    // Waiting for a pooled connection is normal under load (on a saturated process a query
    // holds its connection for a whole event-loop turn), not a sign that the database is gone:
    // failing there lost answers already streamed (bench/RESULTS.md). An unreachable server is
    // caught by ServerClient's own, short, connect timeout.
    connectionTimeoutMillis: config.DB_POOL_WAIT_MS,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its server must not crash the process; the next query reconnects.
  pool.on('error', (error) =>
    logger.warn(
      { err: error, code: 'database_connection_lost', inUse: false },
      'database connection lost',
    ),
  );
  // pg-pool listens for a connection's 'error' only while it is idle. One lost while checked
  // out (a health check, a transaction, between or during its statements) emitted it unheard,
  // and Node ends a process on an unheard 'error'. The statement under way fails by itself
  // (a 503), and release() drops a connection that can no longer be queried.
  const lostInUse = (error: Error) =>
    logger.warn(
      { err: error, code: 'database_connection_lost', inUse: true },
      'database connection lost',
    );
  pool.on('acquire', (client) => client.on('error', lostInUse));
  pool.on('release', (_error, client) => client.removeListener('error', lostInUse));
  // Either leaves the embedded engine unable to answer: /health must say so, not "ok".
  let engineDown = false;
  embedded?.exited.then((code) => {
    engineDown = true;
    if (!closing) logger.fatal({ code }, 'the embedded database thread stopped unexpectedly');
  });
  embedded?.failed.then((reason) => {
    engineDown = true;
    logger.fatal({ reason }, 'the embedded database stopped working; restart Parley');
  });

  let closing = false;
  let closed: Promise<void> | undefined;
  const close = () => {
    closing = true;
    closed ??= embedded
      ? pool.end().then(() => embedded.stop())
      : closeServerPool(pool, openClients, logger);
    return closed;
  };

  const serializeStartup =
    embedded || !config.DATABASE_URL
      ? ownedStartupSerializer
      : serverStartupSerializer(config.DATABASE_URL, logger);
  try {
    const capabilities = await serializeStartup(async () => {
      await applyMigrations(pool);
      return { vector: await ensureVectorExtension(pool, logger) };
    });
    const engine = embedded ? 'embedded' : 'server';
    logger.info(
      {
        engine,
        ...capabilities,
        ...(embedded && {
          sharedBuffers: embedded.sharedBuffers,
          vectorIndexBytes: embedded.vectorIndexBytes,
        }),
      },
      'database ready',
    );
    if (!capabilities.vector) {
      logger.warn(
        'pgvector is not installed on the database server: document retrieval is lexical only',
      );
    }
    return {
      db: drizzle({ client: pool, schema }),
      engine,
      capabilities,
      serializeStartup,
      copyDataDir: embedded && ((path) => embedded.copyDataDir(path)),
      check: async (timeoutMs = 2_000) => (engineDown ? 'unreachable' : check(pool, timeoutMs)),
      close,
    };
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
}

/**
 * How long closing the connections to a PostgreSQL server may take before they are cut. A
 * server that answers closes them within milliseconds; a silent one (a failover, a partition)
 * never does, and its sockets kept the stopping process alive until the last resort.
 */
export const CLOSE_WAIT_MS = 500;

/**
 * Ends the pool: no connection is handed out any more, and the process waits for the ones in
 * use to be given back and for the server to close every connection. Whatever is still open
 * after CLOSE_WAIT_MS is destroyed: a query under way on it fails, its holder gives it back,
 * and the log says how many connections were given up on.
 */
async function closeServerPool(
  pool: PriorityPool,
  openClients: Set<ServerClient>,
  logger: Logger,
): Promise<void> {
  const ended = pool.end().catch(() => {});
  pool.failWaiters();
  const allClosed = (async () => {
    await ended;
    while (openClients.size > 0) {
      await Promise.all(
        [...openClients].map((client) => new Promise((resolve) => client.once('end', resolve))),
      );
    }
  })();
  if (await settlesWithin(allClosed, CLOSE_WAIT_MS)) return;
  logger.warn(
    {
      code: 'database_close_timed_out',
      connections: openClients.size,
      inUse: pool.totalCount,
      waitedMs: CLOSE_WAIT_MS,
    },
    'the database server did not close its connections in time: they were cut',
  );
  for (const client of openClients) client.cut();
  // Their holders give them back as their queries fail; nothing is left to wait on the network.
  await settlesWithin(ended, CLOSE_WAIT_MS);
}

/** Whether `promise` settled (fulfilled) within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

async function applyMigrations(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  // An index build over a large table keeps the server silent for minutes.
  if (client instanceof ServerClient) client.patient = true;
  try {
    await migrate(drizzle({ client }), { migrationsFolder: MIGRATIONS_FOLDER });
  } finally {
    if (client instanceof ServerClient) client.patient = false;
    client.release();
  }
}

/**
 * Whether pgvector is usable, creating the extension where the server has it and this role
 * may (migration 0001 did the same once; a server that gains pgvector later gets it here at
 * the next start). Without it retrieval is lexical only.
 */
async function ensureVectorExtension(pool: pg.Pool, logger: Logger): Promise<boolean> {
  const { rows } = await pool.query<{ available: boolean; installed: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS available,
            EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') AS installed`,
  );
  const { available, installed } = rows[0] ?? { available: false, installed: false };
  if (installed || !available) return installed;
  try {
    await pool.query('CREATE EXTENSION IF NOT EXISTS vector');
    return true;
  } catch (error) {
    logger.warn(
      { code: (error as { code?: string }).code },
      'pgvector is available on the database server but this role may not create it',
    );
    return false;
  }
}

async function check(pool: PriorityPool, timeoutMs: number): Promise<DatabaseState> {
  let timer: NodeJS.Timeout | undefined;
  let connected = false;
  const timeout = new Promise<DatabaseState>((resolve) => {
    // Still waiting behind queries that hold every connection: busy. Still opening a
    // connection, or connected and not answered: unreachable. Decided after one more look at
    // the sockets (an event loop runs timers before I/O, setImmediate after it): when other
    // work held the event loop past the deadline, an answer that came meanwhile is read first,
    // instead of counting as none (a 503 that would take a working replica out of rotation).
    timer = setTimeout(
      () => setImmediate(() => resolve(!connected && pool.saturated ? 'busy' : 'unreachable')),
      timeoutMs,
    );
  });
  // Ahead of the queries already waiting: a burst of them must not read as an outage.
  const answer = pool.connectFirst().then(
    async (client): Promise<DatabaseState> => {
      connected = true;
      let broken: Error | undefined;
      try {
        await client.query('SELECT 1');
        return 'ok';
      } catch (error) {
        broken = error as Error;
        return 'unreachable';
      } finally {
        client.release(broken);
      }
    },
    (error): DatabaseState => (poolWaitTimeout(error) ? 'busy' : 'unreachable'),
  );
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

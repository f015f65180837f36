import type pg from 'pg';
import type { Logger } from 'pino';
import { CLOSE_WAIT_MS, ServerClient } from '../storage/database.ts';
import { RUN_CHANNEL } from '../storage/run-event-repository.ts';

/** What replicas tell each other about resumable runs. */
export type RunNotice =
  /** The run's stored log now goes up to `seq`. */
  | { kind: 'events'; runId: string; seq: number }
  /** Its owner asked the run to stop. */
  | { kind: 'stop'; runId: string }
  /** A listener in another process follows the run: its holder stores it at the fast pace. */
  | { kind: 'watch'; runId: string };

/**
 * One connection per process that LISTENs on the runs' channel of a PostgreSQL server. A
 * notification is only a hint (the stored events are the truth): when the connection is lost
 * it is opened again, and `onReconnect` lets every waiter read what it may have missed.
 *
 * A connection that only listens sends nothing, so a network partition that drops its packets
 * (neither answered nor closed) went unnoticed for good: notifications stopped, and listeners
 * of other replicas' runs fell back to the poll (a fragment every second). A trivial query
 * every KEEP_ALIVE_MS, given up past `replyTimeoutMs` of silence (ServerClient), finds it out.
 */
export class RunNotifications {
  readonly #url: string;
  readonly #replyTimeoutMs: number;
  readonly #logger: Logger;
  readonly #onNotice: (notice: RunNotice) => void;
  readonly #onReconnect: () => void;
  #client: ServerClient | undefined;
  /** A connection being opened (not listening yet): close() destroys it at once. */
  #opening: ServerClient | undefined;
  #closed = false;
  #retryMs = RETRY_MIN_MS;
  #timer: NodeJS.Timeout | undefined;
  #keepAlive: NodeJS.Timeout | undefined;

  constructor(options: {
    url: string;
    /** DB_REPLY_TIMEOUT_MS: the longest the keep-alive query waits in silence. */
    replyTimeoutMs: number;
    logger: Logger;
    onNotice: (notice: RunNotice) => void;
    onReconnect: () => void;
  }) {
    this.#url = options.url;
    this.#replyTimeoutMs = options.replyTimeoutMs;
    this.#logger = options.logger;
    this.#onNotice = options.onNotice;
    this.#onReconnect = options.onReconnect;
  }

  /** Resolves once listening (or after a first failure, retried in the background). */
  async start(): Promise<void> {
    await this.#connect(false);
  }

  async #connect(again: boolean): Promise<void> {
    if (this.#closed) return;
    const client = new ServerClient({
      connectionString: this.#url,
      replyTimeoutMs: this.#replyTimeoutMs,
    });
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      if (this.#client === client) {
        this.#client = undefined;
        clearInterval(this.#keepAlive);
      }
      client.end().catch(() => {});
      if (this.#closed) return;
      this.#logger.warn({ err: error }, 'run notifications lost; listening again');
      this.#retry();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (message) => {
      const notice = parseNotice(message.payload);
      if (notice) this.#onNotice(notice);
    });
    this.#opening = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${RUN_CHANNEL}`);
    } catch (error) {
      onLost(error as Error);
      return;
    } finally {
      if (this.#opening === client) this.#opening = undefined;
    }
    if (this.#closed) {
      await client.endWithin(CLOSE_WAIT_MS);
      return;
    }
    this.#client = client;
    this.#retryMs = RETRY_MIN_MS;
    this.#startKeepAlive(client, onLost);
    if (again) {
      this.#logger.info('listening for run notifications again');
      // Whatever was notified while nobody listened: every waiter reads the log again.
      this.#onReconnect();
    }
  }

  #startKeepAlive(client: pg.Client, onLost: (error?: Error) => void): void {
    clearInterval(this.#keepAlive);
    let asking = false;
    this.#keepAlive = setInterval(() => {
      if (asking) return;
      asking = true;
      client
        .query('SELECT 1')
        .catch(onLost)
        .finally(() => {
          asking = false;
        });
    }, KEEP_ALIVE_MS);
    // Never what keeps a stopping process alive.
    this.#keepAlive.unref();
  }

  #retry(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#connect(true), this.#retryMs);
    this.#timer.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
  }

  /**
   * Stops listening. A server that does not close the connection within CLOSE_WAIT_MS (silent
   * after a failover or a partition) has it destroyed, and the log says so: its socket would
   * keep the stopping process alive.
   */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    clearInterval(this.#keepAlive);
    this.#opening?.cut();
    const client = this.#client;
    this.#client = undefined;
    if (client && (await client.endWithin(CLOSE_WAIT_MS)) === 'cut') {
      this.#logger.warn(
        {
          code: 'database_close_timed_out',
          connections: 1,
          listening: true,
          waitedMs: CLOSE_WAIT_MS,
        },
        'the database server did not close the run notifications connection in time: it was cut',
      );
    }
  }
}

const RETRY_MIN_MS = 200;
const RETRY_MAX_MS = 5_000;
/**
 * How often the listening connection is asked something: a silent partition is noticed within
 * this plus the reply timeout. One trivial query per process, not per listener.
 */
const KEEP_ALIVE_MS = 5_000;

function parseNotice(payload: string | undefined): RunNotice | undefined {
  const [kind, runId, seq] = payload?.split(':') ?? [];
  if (!runId) return undefined;
  if (kind === 'e' && seq) return { kind: 'events', runId, seq: Number(seq) };
  if (kind === 's') return { kind: 'stop', runId };
  if (kind === 'w') return { kind: 'watch', runId };
  return undefined;
}

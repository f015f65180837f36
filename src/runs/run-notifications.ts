import pg from 'pg';
import type { Logger } from 'pino';
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
 */
export class RunNotifications {
  readonly #url: string;
  readonly #logger: Logger;
  readonly #onNotice: (notice: RunNotice) => void;
  readonly #onReconnect: () => void;
  #client: pg.Client | undefined;
  #closed = false;
  #retryMs = RETRY_MIN_MS;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: {
    url: string;
    logger: Logger;
    onNotice: (notice: RunNotice) => void;
    onReconnect: () => void;
  }) {
    this.#url = options.url;
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
    const client = new pg.Client({ connectionString: this.#url, connectionTimeoutMillis: 5_000 });
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      if (this.#client === client) this.#client = undefined;
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
    try {
      await client.connect();
      await client.query(`LISTEN ${RUN_CHANNEL}`);
    } catch (error) {
      onLost(error as Error);
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    this.#retryMs = RETRY_MIN_MS;
    // Whatever was notified while nobody listened: every waiter reads the log again.
    if (again) this.#onReconnect();
  }

  #retry(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#connect(true), this.#retryMs);
    this.#timer.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#client?.end().catch(() => {});
    this.#client = undefined;
  }
}

const RETRY_MIN_MS = 200;
const RETRY_MAX_MS = 5_000;

function parseNotice(payload: string | undefined): RunNotice | undefined {
  const [kind, runId, seq] = payload?.split(':') ?? [];
  if (!runId) return undefined;
  if (kind === 'e' && seq) return { kind: 'events', runId, seq: Number(seq) };
  if (kind === 's') return { kind: 'stop', runId };
  if (kind === 'w') return { kind: 'watch', runId };
  return undefined;
}

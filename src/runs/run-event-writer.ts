import type { Logger } from 'pino';
import type {
  RunEventBatch,
  RunEventRepository,
  RunProgress,
} from '../storage/run-event-repository.ts';

interface RunLog {
  /** Events not stored yet, in order. */
  pending: { seq: number; event: unknown }[];
  lastSeq: number;
  ended: boolean;
}

export interface RunEventWriterOptions {
  store: Pick<RunEventRepository, 'append'>;
  logger: Logger;
  /** Longest an event waits to be stored while the run goes on. */
  flushMs: number;
  /** Called once a run that ended is stored to its end. */
  stored: (runId: string) => void;
}

/** Pause after a failed flush, doubling up to the longest. */
const RETRY_MIN_MS = 200;
const RETRY_MAX_MS = 5_000;

/**
 * Stores the events of every run of this process in one statement per flush (one row per run,
 * holding its events since the last flush): at most one every `flushMs` while answers
 * stream, whatever the number of runs and tokens, plus one at each run's end (sent at once, so a listener elsewhere sees the end without waiting).
 * Per token, the only cost is an array push. A flush that fails keeps its events and is
 * tried again (the database restarting): numbered events are stored once, in order.
 */
export class RunEventWriter {
  readonly #options: RunEventWriterOptions;
  readonly #runs = new Map<string, RunLog>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #retryMs = 0;
  #idleWaiters: (() => void)[] = [];

  constructor(options: RunEventWriterOptions) {
    this.#options = options;
  }

  add(runId: string, seq: number, event: unknown): void {
    let log = this.#runs.get(runId);
    if (!log) {
      log = { pending: [], lastSeq: 0, ended: false };
      this.#runs.set(runId, log);
    }
    log.pending.push({ seq, event });
    log.lastSeq = seq;
    this.#schedule(this.#options.flushMs);
  }

  /** The run has no more events: its last ones are stored now, with its end. */
  end(runId: string): void {
    const log = this.#runs.get(runId);
    if (!log) return;
    log.ended = true;
    this.#schedule(0);
  }

  /** Resolves once everything added is stored. */
  idle(): Promise<void> {
    if (this.#runs.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #schedule(ms: number): void {
    if (this.#flushing) return; // the flush under way schedules the next one
    const wait = Math.max(ms, this.#retryMs);
    if (this.#timer) {
      if (wait > 0) return;
      clearTimeout(this.#timer);
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#flushing = this.#flush().finally(() => {
        this.#flushing = undefined;
        this.#afterFlush();
      });
    }, wait);
  }

  async #flush(): Promise<void> {
    const batches: RunEventBatch[] = [];
    const progress: RunProgress[] = [];
    const taken: [string, RunLog, number, boolean][] = [];
    for (const [runId, log] of this.#runs) {
      if (log.pending.length === 0 && !log.ended) continue;
      const first = log.pending[0];
      if (first)
        batches.push({ runId, firstSeq: first.seq, events: log.pending.map((p) => p.event) });
      progress.push({ runId, lastSeq: log.lastSeq, ended: log.ended });
      taken.push([runId, log, log.pending.length, log.ended]);
    }
    if (taken.length === 0) return;
    try {
      await this.#options.store.append(batches, progress);
      this.#retryMs = 0;
    } catch (error) {
      this.#retryMs = Math.min(Math.max(this.#retryMs * 2, RETRY_MIN_MS), RETRY_MAX_MS);
      this.#options.logger.warn(
        { err: error, runs: taken.length, retryMs: this.#retryMs },
        'run events not stored yet; trying again',
      );
      return;
    }
    for (const [runId, log, count, ended] of taken) {
      log.pending.splice(0, count);
      // Its end was stored with this flush: nothing comes after it.
      if (ended) {
        this.#runs.delete(runId);
        this.#options.stored(runId);
      }
    }
  }

  #afterFlush(): void {
    const waiting = [...this.#runs.values()];
    if (waiting.some((log) => log.pending.length > 0 || log.ended)) {
      this.#schedule(waiting.some((log) => log.ended) ? 0 : this.#options.flushMs);
    } else if (this.#runs.size === 0) {
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
  }
}

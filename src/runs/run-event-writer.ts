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
  /** Another process follows the run: its events are stored at the fast pace. */
  watched: boolean;
}

export interface RunEventWriterOptions {
  store: Pick<RunEventRepository, 'append'>;
  logger: Logger;
  /** Longest an event of a run another process follows waits to be stored. */
  flushMs: number;
  /**
   * Longest an event of a run nobody elsewhere follows waits to be stored (its listeners in
   * this process read it from memory; the log serves a later resume and a restart).
   */
  quietFlushMs: number;
  /** Called once a run that ended is stored to its end. */
  stored: (runId: string) => void;
}

/** Pause after a failed flush, doubling up to the longest. */
const RETRY_MIN_MS = 200;
const RETRY_MAX_MS = 5_000;
/** Runs stored by one statement (a burst's flush takes several, one after the other). */
const RUNS_PER_STATEMENT = 100;

/**
 * Stores the events of every run of this process in one statement per flush, one row per run
 * holding its events since the last flush. The database's cost is per statement and per row,
 * not per token (bench/RESULTS.md, issue 32), so flushes are as rare as listeners allow: every
 * `quietFlushMs` while only this process's listeners follow the runs (they read memory), every
 * `flushMs` once a listener in another process follows one (`watch`), and at once at the end
 * of a watched run. Per token, the only cost is an array push. A flush that fails keeps its
 * events and is tried again (the database restarting): numbered events are stored once, in
 * order.
 */
export class RunEventWriter {
  readonly #options: RunEventWriterOptions;
  readonly #runs = new Map<string, RunLog>();
  #timer: NodeJS.Timeout | undefined;
  /** When the scheduled flush runs (performance.now()). */
  #dueAt = 0;
  #flushing: Promise<void> | undefined;
  #retryMs = 0;
  #idleWaiters: (() => void)[] = [];

  constructor(options: RunEventWriterOptions) {
    this.#options = options;
  }

  add(runId: string, seq: number, event: unknown): void {
    const log = this.#logOf(runId);
    log.pending.push({ seq, event });
    log.lastSeq = seq;
    // The per-token path: a flush already due takes a quiet run's event (none is later).
    if (this.#flushing || (this.#timer && !log.watched)) return;
    this.#schedule(log.watched ? this.#options.flushMs : this.#options.quietFlushMs);
  }

  /** The run has no more events: its last ones are stored with its end. */
  end(runId: string): void {
    const log = this.#runs.get(runId);
    if (!log) return;
    log.ended = true;
    this.#schedule(log.watched ? 0 : this.#options.quietFlushMs);
  }

  /**
   * A listener in another process follows the run (one of this process's, live): what it
   * has is stored now, then often.
   */
  watch(runId: string): void {
    const log = this.#logOf(runId); // perhaps before its first event
    if (log.watched) return;
    log.watched = true;
    this.#schedule(0);
  }

  /** Stores everything added now; resolves once it is stored. */
  idle(): Promise<void> {
    if (this.#runs.size === 0) return Promise.resolve();
    this.#schedule(0);
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #logOf(runId: string): RunLog {
    let log = this.#runs.get(runId);
    if (!log) {
      log = { pending: [], lastSeq: 0, ended: false, watched: false };
      this.#runs.set(runId, log);
    }
    return log;
  }

  #schedule(ms: number): void {
    if (this.#flushing) return; // the flush under way schedules the next one
    const wait = Math.max(ms, this.#retryMs);
    const dueAt = performance.now() + wait;
    if (this.#timer) {
      if (dueAt >= this.#dueAt) return; // an earlier flush takes this event too
      clearTimeout(this.#timer);
    }
    this.#dueAt = dueAt;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#flushing = this.#flush().finally(() => {
        this.#flushing = undefined;
        this.#afterFlush();
      });
    }, wait);
  }

  async #flush(): Promise<void> {
    // A burst's flush holds thousands of runs: stored a slice at a time, so building one
    // statement never holds the event loop (and its streams) for long.
    const runs = [...this.#runs].filter(([, log]) => log.pending.length > 0 || log.ended);
    for (let start = 0; start < runs.length; start += RUNS_PER_STATEMENT) {
      if (!(await this.#store(runs.slice(start, start + RUNS_PER_STATEMENT)))) return;
    }
  }

  /** Stores these runs' pending events in one statement; false when it failed. */
  async #store(runs: [string, RunLog][]): Promise<boolean> {
    const batches: RunEventBatch[] = [];
    const progress: RunProgress[] = [];
    const taken: [string, RunLog, number, boolean][] = [];
    for (const [runId, log] of runs) {
      const first = log.pending[0];
      if (first)
        batches.push({ runId, firstSeq: first.seq, events: log.pending.map((p) => p.event) });
      progress.push({ runId, lastSeq: log.lastSeq, ended: log.ended });
      taken.push([runId, log, log.pending.length, log.ended]);
    }
    try {
      await this.#options.store.append(batches, progress);
      this.#retryMs = 0;
    } catch (error) {
      this.#retryMs = Math.min(Math.max(this.#retryMs * 2, RETRY_MIN_MS), RETRY_MAX_MS);
      this.#options.logger.warn(
        { err: error, runs: taken.length, retryMs: this.#retryMs },
        'run events not stored yet; trying again',
      );
      return false;
    }
    for (const [runId, log, count, ended] of taken) {
      log.pending.splice(0, count);
      // Its end was stored with this flush: nothing comes after it.
      if (ended) {
        this.#runs.delete(runId);
        this.#options.stored(runId);
      }
    }
    return true;
  }

  #afterFlush(): void {
    const waiting = [...this.#runs.values()].filter((log) => log.pending.length > 0 || log.ended);
    if (waiting.length > 0) {
      const soon =
        this.#idleWaiters.length > 0 || waiting.some((log) => log.watched && log.ended)
          ? 0
          : waiting.some((log) => log.watched)
            ? this.#options.flushMs
            : this.#options.quietFlushMs;
      this.#schedule(soon);
    } else if (this.#runs.size === 0) {
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
  }
}

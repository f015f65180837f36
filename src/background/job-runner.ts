import type { Logger } from 'pino';
import type { JobKind, JobMetrics } from '../metrics/metrics.ts';
import type { DrainReport, Job, JobKindDefinition } from './job-kind.ts';
import { KindWorker } from './kind-worker.ts';

/**
 * Every kind of background work (feedback forwarding, memory decisions, embedding backfill,
 * reminder notices) runs here, on one lease loop: claimed from its own table, with the kind's
 * lease, back-off, attempts and concurrency (JobPolicy). Both engines use it: the measured job
 * queues could not run on the embedded one (bench/RESULTS.md, "Job queue").
 */
export class JobRunner {
  readonly #logger: Logger;
  readonly #metrics: JobMetrics | undefined;
  readonly #workers = new Map<JobKind, KindWorker<Job>>();
  #started = false;

  constructor(logger: Logger, metrics?: JobMetrics) {
    this.#logger = logger;
    this.#metrics = metrics;
  }

  add<J extends Job>(definition: JobKindDefinition<J>): void {
    const worker = new KindWorker(definition, this.#logger, this.#metrics);
    this.#workers.set(definition.kind, worker as unknown as KindWorker<Job>);
    if (this.#started) worker.start();
  }

  /** Drains every kind once now (work queued before a restart), then as each kind says. */
  start(): void {
    this.#started = true;
    for (const worker of this.#workers.values()) worker.start();
  }

  /** New work of this kind is due now; calls while a drain runs coalesce. */
  kick(kind: JobKind): void {
    if (this.#started) this.#workers.get(kind)?.kick();
  }

  /** One drain of a kind now, awaited (benchmarks, on a runner that was not started). */
  drainOnce(kind: JobKind): Promise<DrainReport> {
    const worker = this.#workers.get(kind);
    if (!worker || this.#started) throw new Error(`cannot drain ${kind} by hand`);
    return worker.drainOnce();
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#workers.values()].map((worker) => worker.stop()));
  }
}

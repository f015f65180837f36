import type { Logger } from 'pino';
import { DrainLoop } from '../background/drain-loop.ts';
import type { DocumentService } from '../documents/document-service.ts';
import type { JobMetrics } from '../metrics/metrics.ts';
import type { MemoryQueueRepository, PendingExchange } from '../storage/memory-queue-repository.ts';
import type { MemoryDecider } from './memory-decider.ts';

export interface ConversationMemoryOptions {
  queue: MemoryQueueRepository;
  documents: DocumentService;
  decide: MemoryDecider;
  logger: Logger;
  /** How often the queue is checked even when nothing new arrived (other replicas' work). */
  intervalMs?: number;
  /** First retry delay after a failed decision; doubles per failure. */
  backoffMs?: number;
  /** Failed decisions after which an exchange is given up (and the log says so). */
  maxAttempts?: number;
  metrics?: JobMetrics | undefined;
}

export interface Memory {
  id: string;
  text: string;
  createdAt: Date;
}

const BATCH = 20;
/**
 * How long a replica owns an exchange it took: one killed mid-decision (SIGKILL, a crash)
 * delays that exchange this much; a clean shutdown hands it back at once.
 */
const LEASE_MS = 2 * 60_000;
/** The longest one decision may take; none starts later than this before its lease ends. */
const DECISION_BUDGET_MS = 60_000;
const SOURCE_PREFIX = 'memory:';

/**
 * CONV_RAG_ENABLED: after an answer, the model decides in the background whether the exchange
 * is worth remembering; what it keeps is stored in the chunk store as the user's own source,
 * which that user's `search_documents` finds alongside the documents, and no one else's.
 *
 * Answered exchanges are queued in the database before the chat's `__done`, so the decision
 * never delays an answer, and a restart, a shutdown or a replica's death loses none: the
 * queue is drained by whichever process is running. Failures are logged, never shown.
 */
export class ConversationMemory {
  readonly #options: Required<Omit<ConversationMemoryOptions, 'metrics'>> &
    Pick<ConversationMemoryOptions, 'metrics'>;
  /** Aborts the decision under way when the service stops. */
  readonly #stopping = new AbortController();
  readonly #loop: DrainLoop;

  constructor(options: ConversationMemoryOptions) {
    this.#options = { intervalMs: 30_000, backoffMs: 5_000, maxAttempts: 5, ...options };
    this.#loop = new DrainLoop(
      () => this.#drain(),
      (error) => this.#options.logger.warn({ err: error }, 'memory decisions paused'),
      this.#options.intervalMs,
    );
  }

  start(): void {
    this.#loop.start();
  }

  /** Queues an answered exchange (durably) and wakes the worker. */
  async enqueue(exchange: Omit<PendingExchange, 'attempts'>): Promise<void> {
    await this.#options.queue.enqueue(exchange);
    this.#loop.kick();
  }

  /** Stops deciding; a decision under way is abandoned and stays queued for the next start. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#loop.stop();
  }

  async list(userId: string): Promise<Memory[]> {
    const sources = await this.#options.documents.listForUser(userId, 'conversation');
    return sources.map((source) => ({
      id: source.source.slice(SOURCE_PREFIX.length),
      text: source.text,
      createdAt: source.createdAt,
    }));
  }

  /** Deletes one memory, or all of the user's; returns how many went. */
  delete(userId: string, memoryId?: string): Promise<number> {
    return this.#options.documents.deleteForUser(
      userId,
      'conversation',
      memoryId === undefined ? undefined : SOURCE_PREFIX + memoryId,
    );
  }

  async #drain(): Promise<void> {
    const { queue } = this.#options;
    const signal = this.#stopping.signal;
    while (!signal.aborted) {
      const due = await queue.leaseDue(BATCH, LEASE_MS);
      const lastStart = Date.now() + LEASE_MS - DECISION_BUDGET_MS;
      for (const exchange of due) {
        if (signal.aborted) {
          await queue.release(exchange.runId, exchange.attempts, new Date());
          continue;
        }
        if (Date.now() > lastStart) break; // the rest are due again when the lease ends
        await this.#decide(exchange, signal);
      }
      if (due.length < BATCH) return;
    }
  }

  async #decide(exchange: PendingExchange, signal: AbortSignal): Promise<void> {
    const { queue, documents, decide, logger, backoffMs, maxAttempts, metrics } = this.#options;
    const log = logger.child({ runId: exchange.runId, userId: exchange.userId });
    const timeout = AbortSignal.timeout(DECISION_BUDGET_MS);
    try {
      const memory = await decide(exchange, AbortSignal.any([signal, timeout]));
      if (memory !== undefined) {
        await documents.ingestForUser(exchange.userId, {
          source: SOURCE_PREFIX + exchange.runId,
          filename: 'conversation',
          contentType: 'text/plain',
          bytes: Buffer.byteLength(memory),
          document: { kind: 'text', pages: [{ page: null, text: memory }], ocrPages: [] },
        });
      }
      await queue.remove(exchange.runId);
      metrics?.job('memory_decision', 'done');
      log.info({ remembered: memory !== undefined }, 'memory decided');
    } catch (error) {
      if (signal.aborted) {
        // Shutting down: not a failure of the exchange; it is decided after the restart.
        await queue.release(exchange.runId, exchange.attempts, new Date());
        return;
      }
      metrics?.job('memory_decision', 'failed');
      const attempts = exchange.attempts + 1;
      if (attempts >= maxAttempts) {
        await queue.remove(exchange.runId);
        log.warn(
          { err: error, attempts },
          'memory decision failed; the exchange is not remembered',
        );
        return;
      }
      const delay = backoffMs * 2 ** (attempts - 1);
      await queue.release(exchange.runId, attempts, new Date(Date.now() + delay));
      setTimeout(() => this.#loop.kick(), delay).unref();
      log.warn({ err: error, attempts, retryInMs: delay }, 'memory decision failed; will retry');
    }
  }
}

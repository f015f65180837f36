import type { DocumentService } from '../documents/document-service.ts';
import type { MemoryQueueRepository, PendingExchange } from '../storage/memory-queue-repository.ts';

export interface ConversationMemoryOptions {
  queue: MemoryQueueRepository;
  documents: DocumentService;
  /** Tells the job runner an exchange was queued. */
  queued: () => void;
  /** The conversation each run's turn went to (none for the OpenAI door's runs). */
  conversationsOf: (userId: string, runIds: readonly string[]) => Promise<Map<string, string>>;
}

export interface Memory {
  id: string;
  /** The conversation it came from; null for a chat whose client kept the conversation. */
  conversationId: string | null;
  text: string;
  createdAt: Date;
}

export const SOURCE_PREFIX = 'memory:';

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
  readonly #options: ConversationMemoryOptions;

  constructor(options: ConversationMemoryOptions) {
    this.#options = options;
  }

  /** Queues an answered exchange (durably) and wakes the worker. */
  async enqueue(exchange: Omit<PendingExchange, 'attempts'>): Promise<void> {
    await this.#options.queue.enqueue(exchange);
    this.#options.queued();
  }

  async list(userId: string): Promise<Memory[]> {
    const sources = await this.#options.documents.listForUser(userId, 'conversation');
    const ids = sources.map((source) => source.source.slice(SOURCE_PREFIX.length));
    const conversations = await this.#options.conversationsOf(userId, ids);
    return sources.map((source, index) => ({
      id: ids[index] as string,
      conversationId: conversations.get(ids[index] as string) ?? null,
      text: source.text,
      createdAt: source.createdAt,
    }));
  }

  /** Deletes the memories taken from these runs (a conversation deleted); how many went. */
  forgetRuns(userId: string, runIds: readonly string[]): Promise<number> {
    return this.#options.documents.deleteForUser(
      userId,
      'conversation',
      runIds.map((runId) => SOURCE_PREFIX + runId),
    );
  }

  /** Deletes one memory, or all of the user's; returns how many went. */
  delete(userId: string, memoryId?: string): Promise<number> {
    return this.#options.documents.deleteForUser(
      userId,
      'conversation',
      memoryId === undefined ? undefined : SOURCE_PREFIX + memoryId,
    );
  }
}

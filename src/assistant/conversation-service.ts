import type { HistoryRepository, StoredTurn } from '../storage/history-repository.ts';
import type { MessageRepository } from '../storage/message-repository.ts';

/** Owns a user's conversation history. */
export class ConversationService {
  readonly #messages: MessageRepository;
  readonly #history: HistoryRepository | undefined;

  constructor(messages: MessageRepository, history?: HistoryRepository) {
    this.#messages = messages;
    this.#history = history;
  }

  /** Clears the stored history; a user with no history is not an error (spec §4). */
  async reset(userId: string): Promise<void> {
    await this.#messages.deleteForUser(userId);
  }

  /** The user's turns older than `before` (a turn's position), newest first. */
  async turns(userId: string, before: string | undefined, limit: number): Promise<StoredTurn[]> {
    return (await this.#history?.turns(userId, before, limit)) ?? [];
  }
}

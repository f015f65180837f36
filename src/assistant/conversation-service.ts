import type { MessageRepository } from '../storage/message-repository.ts';

/** Owns a user's conversation history. */
export class ConversationService {
  readonly #messages: MessageRepository;

  constructor(messages: MessageRepository) {
    this.#messages = messages;
  }

  /** Clears the stored history; a user with no history is not an error (spec §4). */
  async reset(userId: string): Promise<void> {
    await this.#messages.deleteForUser(userId);
  }
}

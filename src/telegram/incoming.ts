import type { Language } from './telegram-texts.ts';

/** Where a message came from: a linked private chat, its user, the client's language. */
export interface Incoming {
  chatId: number;
  userId: string;
  language: Language;
  /** performance.now() when the update arrived (for the time to the first draft). */
  receivedAt: number;
}

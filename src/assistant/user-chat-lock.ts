import { KeyedMutex } from './keyed-mutex.ts';

/** Gives the turn back; never throws (a failure to clean up is the lock's to log). */
export type ReleaseTurn = () => Promise<void>;

/**
 * Whose turn it is to chat, per user: a user's chats run one at a time, in arrival order, and
 * different users never wait for each other. `acquire` resolves once it is this chat's turn,
 * and rejects with the signal's reason if the client leaves (or the server stops) first.
 */
export interface UserChatLock {
  acquire(userId: string, signal: AbortSignal): Promise<ReleaseTurn>;
}

/**
 * The lock of one process: exact when one process owns the data (the embedded engine), and
 * what the shared lock puts in front of the database so waiters in one process do not poll.
 */
export class LocalUserChatLock implements UserChatLock {
  readonly #mutex = new KeyedMutex();

  async acquire(userId: string, signal: AbortSignal): Promise<ReleaseTurn> {
    const release = await this.#mutex.acquire(userId, signal);
    return async () => release();
  }
}

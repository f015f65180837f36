import { KeyedMutex } from './keyed-mutex.ts';

/** A user's turn to chat, held until released. */
export interface HeldTurn {
  /** Gives the turn back; never throws (a failure to clean up is the lock's to log). */
  release(): Promise<void>;
  /**
   * The shared lock's ticket: the turn is stored only while it still holds the user's turn
   * (a replica that stalled past the TTL has lost it; see RunRepository). None in-process.
   */
  ticket?: number;
}

/**
 * A turn not stored because its chat no longer held the user's turn when it ended: another
 * chat of the same user went ahead meanwhile (its replica stalled past the lock's TTL).
 */
export class TurnLostError extends Error {
  constructor() {
    super("the chat's turn passed to another chat of the same user before it was stored");
    this.name = 'TurnLostError';
  }
}

/**
 * Whose turn it is to chat, per user: a user's chats run one at a time, in arrival order, and
 * different users never wait for each other. `acquire` resolves once it is this chat's turn,
 * and rejects with the signal's reason if the client leaves (or the server stops) first.
 */
export interface UserChatLock {
  acquire(userId: string, signal: AbortSignal): Promise<HeldTurn>;
}

/**
 * The lock of one process: exact when one process owns the data (the embedded engine), and
 * what the shared lock puts in front of the database so waiters in one process do not poll.
 */
export class LocalUserChatLock implements UserChatLock {
  readonly #mutex = new KeyedMutex();

  async acquire(userId: string, signal: AbortSignal): Promise<HeldTurn> {
    const release = await this.#mutex.acquire(userId, signal);
    return { release: async () => release() };
  }
}

import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { HeldTurn, UserChatLock } from './user-chat-lock.ts';

/**
 * Where replicas queue for a user's turn (src/storage/chat-turn-repository.ts). Every call is
 * one short statement: no connection is held while a chat runs.
 */
export interface ChatTurnQueue {
  /** Joins the user's queue; the ticket orders this chat among the user's others. */
  join(userId: string, holder: string): Promise<number>;
  /**
   * Takes the turn if no live ticket is older than this one and no live holder has it. Also
   * clears the user's dead tickets. True once it holds the turn.
   */
  tryTake(userId: string, ticket: number, holder: string, ttlMs: number): Promise<boolean>;
  /**
   * Keeps these tickets of `holder` (and the turns they hold) alive and clears other holders'
   * dead ones; returns those of the tickets that still exist.
   */
  heartbeat(holder: string, tickets: readonly number[], ttlMs: number): Promise<number[]>;
  /** Leaves the queue (and gives the turn back, if held). */
  leave(userId: string, ticket: number): Promise<void>;
}

export interface SharedUserChatLockOptions {
  queue: ChatTurnQueue;
  logger: Logger;
  /** A ticket not refreshed for this long is dead: its replica is gone. */
  ttlMs: number;
  /** First and longest pause between two tries while another replica's chat runs. */
  pollMs?: { min: number; max: number };
}

/** Pauses between tries to leave the queue after a failed leave, doubling. */
const LEAVE_RETRY_MS = { min: 250, max: 5_000 };

/**
 * Serialises one user's chats across replicas sharing a PostgreSQL server. A chat takes a
 * ticket on arrival, waits behind the process's own older chats for that user in memory (no
 * polling), then tries to take the turn, polling with a growing pause while another replica
 * holds it. One heartbeat per process (every ttl/3) keeps all its tickets alive; a replica
 * that dies stops refreshing them, and its turn passes on once the TTL has run out.
 */
export class SharedUserChatLock implements UserChatLock {
  readonly #queue: ChatTurnQueue;
  readonly #logger: Logger;
  readonly #ttlMs: number;
  readonly #poll: { min: number; max: number };
  /** This process's tickets per user, oldest first: only the oldest asks the database. */
  readonly #lines = new Map<string, LocalLine>();
  /** This process, as the holder of its tickets. */
  readonly #holder = randomUUID();
  readonly #tickets = new Set<number>();
  #heartbeat: NodeJS.Timeout | undefined;

  constructor(options: SharedUserChatLockOptions) {
    this.#queue = options.queue;
    this.#logger = options.logger;
    this.#ttlMs = options.ttlMs;
    this.#poll = options.pollMs ?? { min: 20, max: 500 };
  }

  async acquire(userId: string, signal: AbortSignal): Promise<HeldTurn> {
    signal.throwIfAborted();
    const ticket = await this.#queue.join(userId, this.#holder);
    this.#track(ticket);
    const line = this.#line(userId);
    line.tickets.push(ticket);
    line.tickets.sort((x, y) => x - y);
    try {
      await line.frontIs(ticket, signal);
      for (
        let pause = this.#poll.min;
        !(await this.#queue.tryTake(userId, ticket, this.#holder, this.#ttlMs));
      ) {
        await sleep(pause * (0.75 + Math.random() / 2), signal);
        pause = Math.min(pause * 2, this.#poll.max);
      }
    } catch (error) {
      await this.#leave(userId, ticket);
      throw error;
    }
    return { release: () => this.#leave(userId, ticket), ticket };
  }

  #line(userId: string): LocalLine {
    let line = this.#lines.get(userId);
    if (!line) {
      line = new LocalLine();
      this.#lines.set(userId, line);
    }
    return line;
  }

  #track(ticket: number): void {
    this.#tickets.add(ticket);
    this.#heartbeat ??= setInterval(() => void this.#beat(), Math.max(100, this.#ttlMs / 3));
    // A waiting chat must not keep a stopping process alive.
    this.#heartbeat.unref();
  }

  async #leave(userId: string, ticket: number): Promise<void> {
    this.#tickets.delete(ticket); // no longer refreshed, nor missed by #beat
    // Not left in the table: the ticket would block the user until its TTL ran out. Left in
    // the database first, so the next chat in line here finds the turn free.
    await this.#queue.leave(userId, ticket).catch((error: unknown) => {
      this.#logger.warn(
        { err: error, userId, ttlMs: this.#ttlMs },
        'could not leave the chat queue yet; trying again',
      );
      // The database busy or gone for a moment: tried again in the background until it
      // answers or the ticket, no longer refreshed, has expired anyway.
      void this.#leaveLater(userId, ticket);
    });
    if (this.#tickets.size === 0) {
      clearInterval(this.#heartbeat);
      this.#heartbeat = undefined;
    }
    const line = this.#lines.get(userId);
    if (line?.remove(ticket) === 0) this.#lines.delete(userId);
  }

  async #leaveLater(userId: string, ticket: number): Promise<void> {
    const giveUpAt = performance.now() + this.#ttlMs;
    for (let pause = LEAVE_RETRY_MS.min; performance.now() + pause < giveUpAt; ) {
      await delay(pause, undefined, { ref: false });
      try {
        await this.#queue.leave(userId, ticket);
        this.#logger.info({ userId }, 'left the chat queue after all');
        return;
      } catch {
        pause = Math.min(pause * 2, LEAVE_RETRY_MS.max);
      }
    }
  }

  async #beat(): Promise<void> {
    // Only tickets taken before the refresh: a newer one may not be visible to it yet. A
    // ticket whose leave failed is not among them: it expires instead of being kept forever.
    const held = [...this.#tickets];
    try {
      const alive = new Set(await this.#queue.heartbeat(this.#holder, held, this.#ttlMs));
      for (const ticket of held) {
        // Only when this process stalled past the TTL: another replica may have taken over.
        if (!alive.has(ticket) && this.#tickets.has(ticket)) {
          this.#logger.warn({ ticket }, 'a chat ticket expired while held');
        }
      }
    } catch (error) {
      this.#logger.warn({ err: error }, 'chat tickets not refreshed');
    }
  }
}

/**
 * One user's chats in this process, by ticket. Tickets are handed out in arrival order but
 * their INSERTs answer in any order, so waiters queue by ticket, not by who got back first:
 * otherwise a newer chat could wait on the database for an older one of the same process
 * that waits on it in memory.
 */
class LocalLine {
  readonly tickets: number[] = [];
  readonly #waiters = new Set<() => void>();

  /**
   * Resolves once `ticket` is the oldest of this process's tickets for the user. A client that
   * left while the ticket was being written is let go here, even if the ticket is in front.
   */
  async frontIs(ticket: number, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    while (this.tickets[0] !== ticket) {
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          this.#waiters.delete(wake);
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          this.#waiters.delete(wake);
          reject(signal.reason);
        };
        if (signal.aborted) return reject(signal.reason);
        this.#waiters.add(wake);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    }
  }

  /** Drops `ticket`, wakes the waiters to look again; returns how many tickets are left. */
  remove(ticket: number): number {
    const index = this.tickets.indexOf(ticket);
    if (index >= 0) this.tickets.splice(index, 1);
    for (const wake of [...this.#waiters]) wake();
    return this.tickets.length;
  }
}

/**
 * Resolves after `ms`, or rejects with the signal's reason as soon as it is aborted, or at
 * once if it already was: a client that left between two tries must not wait for the turn.
 */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch((error: unknown) => {
    throw signal.aborted ? signal.reason : error;
  });
}

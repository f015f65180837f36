import type { Transformer } from 'grammy';

/**
 * Telegram's 429 is for the whole bot ("retry after N seconds"), so one answer's 429 pauses
 * every chat's sending. Calls that must arrive (a final message, a reply) wait the pause out;
 * calls that can be dropped (a draft, an edit of a growing answer, "typing…") are refused
 * at once while it lasts, so they never queue up behind it: the next one carries the latest
 * text anyway.
 */
export class RateGate {
  #pausedUntil = 0;
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Milliseconds left of the pause; 0 when none. */
  remainingMs(): number {
    return Math.max(0, this.#pausedUntil - this.#now());
  }

  pause(seconds: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, this.#now() + seconds * 1000);
  }

  /** Waits out the pause before each call; notes a 429's `retry_after`. */
  readonly waiting: Transformer = async (prev, method, payload, signal) => {
    for (let wait = this.remainingMs(); wait > 0; wait = this.remainingMs()) {
      await sleep(wait, signal);
    }
    return this.#note(await prev(method, payload, signal));
  };

  /** Refuses a call at once while paused (as a local 429); notes a 429's `retry_after`. */
  readonly refusing: Transformer = async (prev, method, payload, signal) => {
    const wait = this.remainingMs();
    if (wait > 0) {
      return {
        ok: false,
        error_code: 429,
        description: 'Too Many Requests: paused by Parley after a 429',
        parameters: { retry_after: Math.ceil(wait / 1000) },
      };
    }
    return this.#note(await prev(method, payload, signal));
  };

  #note<T extends { ok: boolean }>(result: T): T {
    const failed = result as {
      ok: boolean;
      error_code?: number;
      parameters?: { retry_after?: number };
    };
    if (!failed.ok && failed.error_code === 429) this.pause(failed.parameters?.retry_after ?? 1);
    return result;
  }
}

/** grammY's Node build types its signals with the `abort-controller` package's class. */
interface SignalLike {
  aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

function sleep(ms: number, signal: SignalLike | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('aborted'));
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', abort);
      resolve();
    }
    function abort() {
      clearTimeout(timer);
      reject(new Error('aborted'));
    }
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/** Gives a slot back (to the first holder waiting, if any); calling it again does nothing. */
export type Release = () => void;

/** A place in line taken before asking for the slot (see `Slots.join`). */
export interface Place {
  /** Waits for the slot, in arrival order; `signal` leaves the line. */
  take(signal?: AbortSignal): Promise<Release>;
  /** Gives the place up unused; after `take`, does nothing. */
  leave(): void;
}

/**
 * At most `size` holders at once; the others wait in arrival order. A line of `lineMax`
 * refuses newcomers that `join` (each waiting holder costs its caller something: an upload
 * holds a request, a connection and a file).
 */
export class Slots {
  readonly #size: number;
  readonly #lineMax: number;
  #used = 0;
  /** Places joined and not yet taken or left: they count as waiting. */
  #joined = 0;
  readonly #line: (() => void)[] = [];

  constructor(size: number, lineMax = Number.POSITIVE_INFINITY) {
    this.#size = size;
    this.#lineMax = lineMax;
  }

  /** Whether a new holder would wait. */
  get busy(): boolean {
    return this.#used >= this.#size;
  }

  /** Holders waiting for a slot, places joined included. */
  get waiting(): number {
    return this.#line.length + this.#joined;
  }

  /**
   * Takes a place now, so that checks the caller awaits before asking for its slot cannot let
   * a burst past `lineMax`; undefined when the line is full.
   */
  join(): Place | undefined {
    if (this.#used + this.waiting >= this.#size + this.#lineMax) return undefined;
    this.#joined++;
    let open = true;
    const close = () => {
      if (open) this.#joined--;
      open = false;
    };
    return {
      take: (signal) => {
        close();
        return this.acquire(signal);
      },
      leave: close,
    };
  }

  /** Waits for a slot, in arrival order, whatever the line's length; `signal` leaves the line. */
  acquire(signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#used < this.#size) {
      this.#used++;
      return Promise.resolve(this.#release());
    }
    return new Promise((resolve, reject) => {
      const granted = () => {
        signal?.removeEventListener('abort', gone);
        resolve(this.#release());
      };
      const gone = () => {
        this.#line.splice(this.#line.indexOf(granted), 1);
        reject(signal?.reason);
      };
      this.#line.push(granted);
      signal?.addEventListener('abort', gone, { once: true });
    });
  }

  /** A slot held: handed on to the first in line when given back. */
  #release(): Release {
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const next = this.#line.shift();
      if (next) next();
      else this.#used--;
    };
  }
}

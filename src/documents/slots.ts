/** At most `size` holders at once; the others wait in arrival order. */
export class Slots {
  readonly #size: number;
  #used = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number) {
    this.#size = size;
  }

  /** Whether a new holder would wait. */
  get busy(): boolean {
    return this.#used >= this.#size;
  }

  /** Holders waiting for a slot. */
  get waiting(): number {
    return this.#waiting.length;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.#used >= this.#size) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#used++;
    try {
      return await work();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#used--;
    }
  }
}

import { expect } from 'vitest';

/**
 * The log-privacy tests put a marker into everything that comes from users or from outside
 * (messages, tool arguments and results, upstream error bodies) and assert that none of it was
 * printed: on failure, the assertion shows where a marker was.
 */
export const MARKER = 'secret-';

/** `output` (everything a process printed) holds none of `markers`. */
export function expectNoSecrets(output: string, markers: readonly string[] = [MARKER]): void {
  for (const marker of markers) {
    const at = output.indexOf(marker);
    expect(at, at >= 0 ? output.slice(Math.max(0, at - 300), at + 100) : '').toBe(-1);
  }
}

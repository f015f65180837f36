import { expect } from 'vitest';

/**
 * Asks `/health` every 50 ms until `work` settles, and answers the longest it took: how long
 * any other user waited meanwhile (the event loop held by the work shows here). Every answer
 * must be 200.
 */
export async function longestHealthWait(
  parley: { fetch: (path: string) => Promise<Response> },
  work: Promise<unknown>,
): Promise<number> {
  let longestMs = 0;
  let done = false;
  const settle = () => {
    done = true;
  };
  work.then(settle, settle); // a failure is the caller's to see, when it awaits the work
  while (!done) {
    const asked = performance.now();
    expect((await parley.fetch('/health')).status).toBe(200);
    longestMs = Math.max(longestMs, performance.now() - asked);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return longestMs;
}

import { type ChatResult, chat, timedGet } from './sse-client.ts';

export interface Probe {
  /** performance.now() when the request was sent. */
  at: number;
  status: number;
  ms: number;
}

/**
 * GETs `url` every `everyMs` (or right after the previous answer, when that took longer)
 * until stopped: the latency a client sees, which includes any stall of the server.
 */
export function pollEvery(url: string, everyMs: number) {
  const probes: Probe[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const at = performance.now();
      const { status, ms } = await timedGet(url);
      probes.push({ at, status, ms });
      const wait = at + everyMs - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();
  return {
    probes,
    async stop() {
      running = false;
      await loop;
    },
  };
}

/**
 * `workers` clients, each chatting again as soon as its previous answer ended, until stopped.
 * Client i starts after i × `staggerMs`, so that chats begin and end all the time rather
 * than in lockstep.
 */
export function chatLoop(baseUrl: string, workers: number, userPrefix: string, staggerMs = 0) {
  const results: ChatResult[] = [];
  let running = true;
  const loops = Array.from({ length: workers }, async (_, i) => {
    await new Promise((resolve) => setTimeout(resolve, i * staggerMs));
    while (running) results.push(await chat(baseUrl, `${userPrefix}-${i}`));
  });
  return {
    results,
    /** Lets the chats in flight finish, then resolves. */
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

import { reply, startFakeLlmServer } from '../../test/support/fake-llm-server.ts';
import type { ReplyShape } from './fake-llm.ts';

/**
 * The test suite's fake OpenAI-compatible server, in its own process so that on a 2-core
 * machine it does not share an event loop with the benchmark's client. Every chat request is
 * answered with the same reply, changed over IPC. The request logs the fake keeps for tests
 * are emptied every second: a benchmark sends far more requests than a test.
 */
const server = await startFakeLlmServer();
let shape: ReplyShape = { tokens: 3, delayMs: 0 };
let served = 0;
/** When chat requests arrived (epoch ms, sub-ms precision), until asked for. */
let arrivals: number[] = [];

server.respond(() => {
  served++;
  if (arrivals.length < 10_000) arrivals.push(performance.timeOrigin + performance.now());
  return reply.text(tokens(shape.tokens), { delayMs: shape.delayMs });
});

setInterval(() => {
  server.requests.length = 0;
  server.chats.length = 0;
}, 1_000).unref();

process.on('message', (message: { type: string; shape?: ReplyShape }) => {
  if (message.type === 'reply' && message.shape) shape = message.shape;
  if (message.type === 'arrivals') {
    process.send?.({ type: 'arrivals', arrivals });
    arrivals = [];
    return;
  }
  if (message.type === 'stats') {
    const unexpected = server.unexpected.length;
    process.send?.({ type: 'stats', served, unexpected });
    return;
  }
  process.send?.({ type: 'ok' });
});
process.on('disconnect', () => void server.close().then(() => process.exit(0)));
process.send?.({ type: 'ready', url: server.url });

/** "t1 t2 … tN": N words, which the fake sends one chunk each (a space leads all but the first). */
function tokens(count: number): string {
  return Array.from({ length: count }, (_, i) => (i === 0 ? 't1' : ` t${i + 1}`)).join('');
}

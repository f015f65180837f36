import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { AggregatorRegistry, type Registry } from 'prom-client';

/**
 * With PARLEY_WORKERS > 1 a scrape reaches whichever worker the port hands it to; answered
 * from that worker's registry alone, counters would jump between workers' values. So a
 * worker asks the primary, which collects every worker's registry (prom-client's
 * AggregatorRegistry, over the cluster's IPC channel) and sums them: one scrape, the whole
 * machine. Histograms and counters add up; gauges too (chats in flight, pool waits).
 */

const ASK = 'parley:metrics?';
const ANSWER = 'parley:metrics';
/** prom-client gives up on a worker after 5 s; the asking worker waits a little longer. */
const WAIT_MS = 6_000;

interface Answer {
  type: typeof ANSWER;
  id: string;
  text?: string;
  error?: string;
}

/** In the primary: answers workers' requests with every worker's metrics, summed. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: { type?: string; id?: string }) => {
    if (message?.type !== ASK) return;
    const reply = (answer: Omit<Answer, 'type' | 'id'>) => {
      if (worker.isConnected()) worker.send({ type: ANSWER, id: message.id, ...answer });
    };
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (error: unknown) => reply({ error: error instanceof Error ? error.message : 'failed' }),
    );
  });
}

/**
 * In a worker: hands this worker's registry to the primary's collection, and returns how to
 * get the summed text (or this registry's own, when not a cluster worker).
 */
export function clusterMetricsText(registry: Registry): () => Promise<string> {
  if (!cluster.isWorker) return () => registry.metrics();
  AggregatorRegistry.setRegistries([registry]);
  new AggregatorRegistry(); // installs the worker's side of the collection
  return () =>
    new Promise((resolve, reject) => {
      const id = randomUUID();
      const timer = setTimeout(() => {
        process.off('message', onMessage);
        reject(new Error('the primary did not answer with the metrics'));
      }, WAIT_MS);
      const onMessage = (message: Answer) => {
        if (message?.type !== ANSWER || message.id !== id) return;
        clearTimeout(timer);
        process.off('message', onMessage);
        if (message.text !== undefined) resolve(message.text);
        else reject(new Error(`collecting the workers' metrics failed: ${message.error}`));
      };
      process.on('message', onMessage);
      process.send?.({ type: ASK, id });
    });
}

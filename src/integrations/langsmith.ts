import type { Logger } from 'pino';
import type { RunTracer } from '../assistant/run-tracer.ts';
import type { Config } from '../config.ts';
import type { FeedbackSink } from '../feedback/feedback-sink.ts';
import { createBoundedFetch } from '../models/answer-bound.ts';
import { langSmithFeedbackSink } from './langsmith-feedback-sink.ts';

/**
 * The most a LangSmith answer is read to: Parley reads only small ones (a feedback object, the
 * server's info, a batch's acknowledgement), a few kB; 1 MiB leaves room many times over.
 */
export const LANGSMITH_ANSWER_MAX_BYTES = 1024 * 1024;

export interface LangSmith {
  tracer: RunTracer;
  feedbackSink: FeedbackSink;
  /** Waits for batched traces to be sent (at shutdown). */
  flush(): Promise<void>;
}

/**
 * LangSmith is used only when LANGSMITH_API_KEY is set, and its client (~120 modules, ~50 ms
 * of a start) is loaded only then.
 */
export async function connectLangSmith(
  config: Pick<Config, 'LANGSMITH_API_KEY' | 'LANGSMITH_ENDPOINT' | 'LANGSMITH_PROJECT'>,
  logger: Logger,
): Promise<LangSmith | undefined> {
  if (!config.LANGSMITH_API_KEY) return undefined;
  const [{ Client }, { langSmithTracer }] = await Promise.all([
    import('langsmith'),
    import('./langsmith-tracer.ts'),
  ]);
  // The client retries each call 4 times over ~12 s on its own (not configurable in 0.12);
  // past that, the feedback outbox retries with its own backoff for as long as it takes. Its
  // 90 s default timeout per attempt would let one send outlast the outbox's lease.
  const client = new Client({
    apiKey: config.LANGSMITH_API_KEY,
    timeout_ms: 10_000,
    fetchImplementation: createBoundedFetch('LangSmith server', LANGSMITH_ANSWER_MAX_BYTES),
    ...(config.LANGSMITH_ENDPOINT ? { apiUrl: config.LANGSMITH_ENDPOINT } : {}),
  });
  logger.info(
    { endpoint: config.LANGSMITH_ENDPOINT ?? 'default', project: config.LANGSMITH_PROJECT },
    'tracing chats to LangSmith',
  );
  return {
    tracer: langSmithTracer(client, config.LANGSMITH_PROJECT, logger),
    feedbackSink: langSmithFeedbackSink(client),
    flush: () => client.awaitPendingTraceBatches(),
  };
}

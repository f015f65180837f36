import type { Logger } from 'pino';
import type { RunTracer } from '../assistant/run-tracer.ts';
import type { Config } from '../config.ts';
import type { FeedbackSink } from '../feedback/feedback-sink.ts';
import { createBoundedFetch } from '../models/answer-bound.ts';
import { shownUri } from '../models/shown-uri.ts';
import { langSmithFeedbackSink } from './langsmith-feedback-sink.ts';
import { withoutErrorBodies } from './without-error-bodies.ts';

/**
 * The most a LangSmith answer is read to: Parley reads only small ones (a feedback object, the
 * server's info, a run's acknowledgement), a few kB; 1 MiB leaves room many times over.
 */
export const LANGSMITH_ANSWER_MAX_BYTES = 1024 * 1024;

export interface LangSmith {
  tracer: RunTracer;
  feedbackSink: FeedbackSink;
  /** Waits for the traces under way to be sent (at shutdown). */
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
  //
  // Nothing of what LangSmith answers may reach the console: the client prints the failures of
  // its background batches there itself (console.warn / console.error), with the server's
  // answer, which for a refused trace quotes the chat. So: no auto-batching, each run is sent
  // by a call whose failure comes back to the tracer, which logs its kind and status (a chat
  // costs 2 requests plus one per model or tool call instead of one or two batches; each is
  // small and sent off the chat's path on a kept-alive connection); error answers reach the
  // client without their body, for whatever else it prints (its `/info` warning); and no
  // `debug`, which LANGSMITH_DEBUG in the environment would turn on, printing every request.
  const client = new Client({
    apiKey: config.LANGSMITH_API_KEY,
    timeout_ms: 10_000,
    autoBatchTracing: false,
    debug: false,
    fetchImplementation: withoutErrorBodies(
      createBoundedFetch('LangSmith server', LANGSMITH_ANSWER_MAX_BYTES),
    ),
    ...(config.LANGSMITH_ENDPOINT ? { apiUrl: config.LANGSMITH_ENDPOINT } : {}),
  });
  // Shown as every server's address is: a proxy's endpoint may carry its password.
  const endpoint = config.LANGSMITH_ENDPOINT ? shownUri(config.LANGSMITH_ENDPOINT) : 'default';
  logger.info({ endpoint, project: config.LANGSMITH_PROJECT }, 'tracing chats to LangSmith');
  const tracer = langSmithTracer(client, config.LANGSMITH_PROJECT, logger);
  return { tracer, feedbackSink: langSmithFeedbackSink(client), flush: () => tracer.flush() };
}

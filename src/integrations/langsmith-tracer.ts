import { type Client, RunTree } from 'langsmith';
import type { Logger } from 'pino';
import type { RunTrace, RunTracer } from '../assistant/run-tracer.ts';
import { errorKindOf } from '../background/error-kind.ts';

/**
 * Sends under way at most (a chat has ~6 while it is traced: its run, each model and tool call,
 * its end). Each is bounded in time (the client's timeout and retries, ~50 s), but while
 * LangSmith is slow a busy server would hold ever more, every chat's words among them: past
 * this (a burst of 1,000 chats stays under it), a trace is not sent, with one log line until
 * they drain.
 */
export const MAX_PENDING_SENDS = 10_000;

export interface LangSmithTracer extends RunTracer {
  /** Waits for the runs under way to be sent or given up on (at shutdown). */
  flush(): Promise<void>;
}

/**
 * Traces each chat to LangSmith as a root `chain` run whose id is the chat's `run_id`, so
 * feedback sent for that id lands on the trace; model calls are `llm` children and tool
 * calls `tool` children. Nothing here is awaited by the chat, and a LangSmith outage only
 * costs a log line.
 *
 * Each run is sent by the client's own `createRun` / `updateRun` (the client is built without
 * auto-batching, langsmith.ts), never by `RunTree.postRun` / `patchRun`: those, like the
 * client's batches, catch a failure and print it with `console.error`, past the log, with
 * the server's answer in the message. Here a failure comes back to us and is logged as its
 * kind and status. The RunTree only builds the runs (ids, trace id, dotted order).
 */
export function langSmithTracer(
  client: Client,
  projectName: string,
  logger: Logger,
): LangSmithTracer {
  /** What is still to be sent or given up on, awaited by `flush`. */
  const pending = new Set<Promise<boolean>>();
  /** Whether traces are being left out (logged when it starts). */
  let leavingOut = false;
  const track = (work: Promise<boolean>) => {
    pending.add(work);
    void work.finally(() => pending.delete(work));
    return work;
  };
  /** Sends one run; resolves whether it was sent (a failure is logged, never thrown). */
  const send = (what: string, runId: string, upload: () => Promise<unknown>) => {
    if (pending.size >= MAX_PENDING_SENDS) {
      if (!leavingOut) {
        leavingOut = true;
        logger.warn(
          { pending: pending.size },
          'LangSmith: too many traces waiting; leaving out new ones',
        );
      }
      return Promise.resolve(false);
    }
    leavingOut = false;
    return track(
      Promise.resolve()
        .then(upload)
        .then(
          () => true,
          (error: unknown) => {
            logger.warn(
              { err: error, errorKind: errorKindOf(error), runId },
              `LangSmith: could not send ${what}`,
            );
            return false;
          },
        ),
    );
  };

  return {
    async flush() {
      while (pending.size > 0) await Promise.all(pending);
    },
    startRun({ runId, userId, model, input }): RunTrace {
      const root = new RunTree({
        id: runId,
        name: 'parley-chat',
        run_type: 'chain',
        project_name: projectName,
        client,
        tracingEnabled: true,
        inputs: { message: input, user_id: userId },
        metadata: { user_id: userId, model },
      });
      const created = root.toJSON(); // now, while it has no children to carry
      const posted = send('the run', runId, () => client.createRun(created));
      // A model or tool call, and the run's end, follow the run they belong to; once that
      // was refused, they would only be refused too (or land without it), one log line each.
      const afterRoot = (what: string, upload: () => Promise<unknown>) =>
        void track(posted.then((sent) => sent && send(what, runId, upload)));

      const child = (config: ConstructorParameters<typeof RunTree>[0]) => {
        const run = root.createChild(config).toJSON();
        afterRoot(`a ${config.run_type} run`, () => client.createRun(run));
      };

      return {
        modelCall(step) {
          child({
            name: model,
            run_type: 'llm',
            start_time: step.startedAt.getTime(),
            end_time: step.endedAt.getTime(),
            inputs: { step: step.index },
            outputs: { text: step.text, tool_calls: step.toolCalls },
            metadata: {
              usage_metadata: {
                input_tokens: step.inputTokens ?? 0,
                output_tokens: step.outputTokens ?? 0,
                total_tokens: (step.inputTokens ?? 0) + (step.outputTokens ?? 0),
              },
            },
          });
        },
        toolCall(call) {
          child({
            name: call.name,
            run_type: 'tool',
            start_time: call.startedAt.getTime(),
            end_time: call.endedAt.getTime(),
            inputs: { input: call.input },
            outputs: call.error === undefined ? { output: call.output } : {},
            ...(call.error === undefined ? {} : { error: call.error }),
          });
        },
        end({ status, answer, error }) {
          const endTime = Date.now();
          afterRoot('the end of the run', () =>
            client.updateRun(runId, {
              end_time: endTime,
              outputs: { answer, status },
              ...(error === undefined ? {} : { error }),
              trace_id: root.trace_id,
              dotted_order: root.dotted_order,
              session_name: projectName,
            }),
          );
        },
      };
    },
  };
}

import { type Client, RunTree } from 'langsmith';
import type { Logger } from 'pino';
import type { RunTrace, RunTracer } from '../assistant/run-tracer.ts';

/**
 * Traces each chat to LangSmith as a root `chain` run whose id is the chat's `run_id`, so
 * feedback sent for that id lands on the trace; model calls are `llm` children and tool
 * calls `tool` children. The client batches in the background; nothing here is awaited by
 * the chat, and a LangSmith outage only costs a log line.
 */
export function langSmithTracer(client: Client, projectName: string, logger: Logger): RunTracer {
  const report = (what: string) => (error: unknown) =>
    logger.warn({ err: error }, `LangSmith: could not send ${what}`);

  return {
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
      const posted = root.postRun().catch(report('the run'));

      const child = (
        config: ConstructorParameters<typeof RunTree>[0],
        outputs: object,
        error?: string,
      ) => {
        const run = root.createChild(config);
        void posted
          .then(async () => {
            await run.end(outputs as Record<string, unknown>, error, Number(config.end_time));
            await run.postRun();
          })
          .catch(report(`a ${config.run_type} run`));
      };

      return {
        modelCall(step) {
          child(
            {
              name: model,
              run_type: 'llm',
              start_time: step.startedAt.getTime(),
              end_time: step.endedAt.getTime(),
              inputs: { step: step.index },
              metadata: {
                usage_metadata: {
                  input_tokens: step.inputTokens ?? 0,
                  output_tokens: step.outputTokens ?? 0,
                  total_tokens: (step.inputTokens ?? 0) + (step.outputTokens ?? 0),
                },
              },
            },
            { text: step.text, tool_calls: step.toolCalls },
          );
        },
        toolCall(call) {
          child(
            {
              name: call.name,
              run_type: 'tool',
              start_time: call.startedAt.getTime(),
              end_time: call.endedAt.getTime(),
              inputs: { input: call.input },
            },
            call.error === undefined ? { output: call.output } : {},
            call.error,
          );
        },
        end({ status, answer, error }) {
          void posted
            .then(async () => {
              await root.end({ answer, status }, error);
              await root.patchRun();
            })
            .catch(report('the end of the run'));
        },
      };
    },
  };
}

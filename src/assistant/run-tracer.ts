/**
 * Where a chat run's trace goes (LangSmith when configured). The chat service reports what
 * happened; an adapter turns it into the tracing service's runs. Tracing must never break
 * or slow a chat: adapters swallow and log their own failures.
 */
export interface RunTracer {
  startRun(run: { runId: string; userId: string; model: string; input: string }): RunTrace;
}

export interface RunTrace {
  modelCall(step: {
    index: number;
    startedAt: Date;
    endedAt: Date;
    text: string;
    toolCalls: { id: string; name: string; input: unknown }[];
    inputTokens?: number | undefined;
    outputTokens?: number | undefined;
  }): void;
  toolCall(call: {
    id: string;
    name: string;
    input: unknown;
    startedAt: Date;
    endedAt: Date;
    output?: unknown;
    error?: string | undefined;
  }): void;
  end(outcome: { status: string; answer: string; error?: string | undefined }): void;
}

export const noTracing: RunTracer = {
  startRun: () => ({ modelCall() {}, toolCall() {}, end() {} }),
};

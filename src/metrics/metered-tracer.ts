import type { RunTracer } from '../assistant/run-tracer.ts';
import type { Metrics } from './metrics.ts';

/** The run tracer, also counting the tokens each model call reports (for /metrics). */
export function meteredTracer(tracer: RunTracer, metrics: Pick<Metrics, 'tokens'>): RunTracer {
  return {
    startRun(run) {
      const trace = tracer.startRun(run);
      return {
        modelCall(step) {
          metrics.tokens('input', step.inputTokens);
          metrics.tokens('output', step.outputTokens);
          trace.modelCall(step);
        },
        toolCall: (call) => trace.toolCall(call),
        end: (outcome) => trace.end(outcome),
      };
    },
  };
}

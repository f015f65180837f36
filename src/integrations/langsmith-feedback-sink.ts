import type { Client } from 'langsmith';
import type { FeedbackSink } from '../feedback/feedback-sink.ts';

/**
 * Sends feedback to LangSmith under our own feedback id, so a retry after a lost answer
 * updates the same record instead of adding a second one.
 */
export function langSmithFeedbackSink(client: Client): FeedbackSink {
  return {
    async send(feedback) {
      await client.createFeedback(feedback.runId, feedback.key, {
        score: feedback.score,
        comment: feedback.comment ?? undefined,
        feedbackId: feedback.id,
        feedbackSourceType: 'api',
      });
    },
  };
}

import type { Client } from 'langsmith';
import type { FeedbackSink } from '../feedback/feedback-sink.ts';

/**
 * Sends feedback to LangSmith under our own feedback id: created once (POST /feedback with
 * that id), and a changed rating updates it (PATCH /feedback/{id}), so LangSmith holds one
 * feedback per rating with its latest score. A create whose answer was lost is sent again;
 * should LangSmith answer that it already has the id (409), it is updated instead.
 */
export function langSmithFeedbackSink(client: Client): FeedbackSink {
  const update = (id: string, score: number, comment: string | null) =>
    client.updateFeedback(id, { score, ...(comment === null ? {} : { comment }) });
  return {
    async send(feedback) {
      if (feedback.forwardedOnce) return update(feedback.id, feedback.score, feedback.comment);
      try {
        await client.createFeedback(feedback.runId, feedback.key, {
          score: feedback.score,
          comment: feedback.comment ?? undefined,
          feedbackId: feedback.id,
          feedbackSourceType: 'api',
        });
      } catch (error) {
        if ((error as { status?: unknown } | null)?.status !== 409) throw error;
        await update(feedback.id, feedback.score, feedback.comment);
      }
    },
  };
}

import { notFound } from '../errors.ts';
import type { FeedbackRepository, NewFeedback } from '../storage/feedback-repository.ts';

/** Feedback is stored first; forwarding to the tracing service happens from that record. */
export class FeedbackService {
  readonly #feedback: FeedbackRepository;
  readonly #stored: () => void;

  /** `stored` is told after each save, to forward it without making the client wait. */
  constructor(feedback: FeedbackRepository, stored: () => void = () => {}) {
    this.#feedback = feedback;
    this.#stored = stored;
  }

  async submit(input: NewFeedback): Promise<{ feedbackId: string }> {
    const feedbackId = await this.#feedback.insert(input);
    if (!feedbackId) throw notFound(`No chat run with run_id ${input.runId}`);
    this.#stored();
    return { feedbackId };
  }
}

import { notFound } from '../errors.ts';
import type { FeedbackRepository, NewFeedback } from '../storage/feedback-repository.ts';
import type { RunRepository } from '../storage/run-repository.ts';

/** Feedback is stored first; forwarding to the tracing service happens from that record. */
export class FeedbackService {
  readonly #runs: RunRepository;
  readonly #feedback: FeedbackRepository;
  readonly #stored: () => void;

  /** `stored` is told after each save, to forward it without making the client wait. */
  constructor(runs: RunRepository, feedback: FeedbackRepository, stored: () => void = () => {}) {
    this.#runs = runs;
    this.#feedback = feedback;
    this.#stored = stored;
  }

  async submit(input: NewFeedback): Promise<{ feedbackId: string }> {
    if (!(await this.#runs.exists(input.runId))) {
      throw notFound(`No chat run with run_id ${input.runId}`);
    }
    const feedbackId = await this.#feedback.insert(input);
    this.#stored();
    return { feedbackId };
  }
}

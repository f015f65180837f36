import { notFound } from '../errors.ts';
import type { FeedbackRepository, NewFeedback } from '../storage/feedback-repository.ts';
import type { RunRepository } from '../storage/run-repository.ts';

/** Feedback is stored first; forwarding to the tracing service happens from that record. */
export class FeedbackService {
  readonly #runs: RunRepository;
  readonly #feedback: FeedbackRepository;

  constructor(runs: RunRepository, feedback: FeedbackRepository) {
    this.#runs = runs;
    this.#feedback = feedback;
  }

  async submit(input: NewFeedback): Promise<{ feedbackId: string }> {
    if (!(await this.#runs.exists(input.runId))) {
      throw notFound(`No chat run with run_id ${input.runId}`);
    }
    return { feedbackId: await this.#feedback.insert(input) };
  }
}

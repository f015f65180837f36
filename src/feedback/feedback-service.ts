import { notFound } from '../errors.ts';
import type {
  ButtonPress,
  FeedbackRepository,
  NewFeedback,
} from '../storage/feedback-repository.ts';

/** Feedback is stored first; forwarding to the tracing service happens from that record. */
export class FeedbackService {
  readonly #feedback: FeedbackRepository;
  readonly #stored: () => void;

  /** `stored` is told after each save, to forward it without making the client wait. */
  constructor(feedback: FeedbackRepository, stored: () => void = () => {}) {
    this.#feedback = feedback;
    this.#stored = stored;
  }

  /** POST /feedback: each call adds a rating of the run. */
  async submit(input: NewFeedback): Promise<{ feedbackId: string }> {
    const feedbackId = await this.#feedback.insert(input);
    if (!feedbackId) throw notFound(`No chat run with run_id ${input.runId}`);
    this.#stored();
    return { feedbackId };
  }

  /** A 👍/👎 button: the user's one rating of the run there; pressing again changes it. */
  async press(input: ButtonPress): Promise<{ feedbackId: string }> {
    const feedbackId = await this.#feedback.recordPress(input);
    if (!feedbackId) throw notFound(`No chat run with run_id ${input.runId}`);
    this.#stored();
    return { feedbackId };
  }
}

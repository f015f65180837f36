/** Where stored feedback is forwarded (LangSmith). `send` throws when it was not accepted. */
export interface FeedbackSink {
  send(feedback: {
    id: string;
    runId: string;
    key: string;
    score: number;
    comment: string | null;
    /** Sent before (the user changed their rating since): update that feedback in place. */
    forwardedOnce: boolean;
  }): Promise<void>;
}

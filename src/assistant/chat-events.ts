/**
 * What the assistant produces for one chat, in order: answer fragments (the `<think>` markers
 * included when thinking is shown), at most one error, then exactly one `done`. The HTTP edge
 * turns these into server-sent events; nothing here knows about HTTP.
 */
export type ChatEvent =
  | { type: 'text'; text: string }
  | { type: 'error'; code: ChatErrorCode; message: string }
  | { type: 'done'; runId: string };

export type ChatErrorCode =
  | 'model_not_configured'
  | 'model_unreachable'
  | 'model_error'
  | 'model_timeout'
  | 'model_bad_response'
  | 'database_unavailable'
  | 'shutting_down'
  | 'turn_lost'
  | 'internal_error';

/** The abort reason the HTTP edge gives when the server is stopping (not the client leaving). */
export const SHUTDOWN = 'shutdown';

export interface ChatRequest {
  userId: string;
  message: string;
  showThinking: boolean;
  /** The request's image, already decoded into its own temporary file; this request only. */
  image?: RequestImage | undefined;
}

/** A handle to a request's image: the HTTP edge owns the file and removes it. */
export interface RequestImage {
  path: string;
  mediaType: string;
  bytes: number;
}

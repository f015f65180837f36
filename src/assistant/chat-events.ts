import type { FinishReason, ModelMessage } from 'ai';

/**
 * What the assistant produces for one chat, in order: answer fragments (the `<think>` markers
 * included when thinking is shown), at most one error, then exactly one `done`. A request that
 * asks for `separateReasoning` gets the model's reasoning as `reasoning` events instead of
 * tagged fragments. Each door (the spec's SSE, the OpenAI-compatible API) turns these into its
 * own protocol; nothing here knows about HTTP.
 */
export type ChatEvent =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | {
      type: 'error';
      code: ChatErrorCode;
      message: string;
      /** model_downloading: how far the download is, for a door to say in its own words. */
      percent?: number;
    }
  | {
      type: 'done';
      runId: string;
      end?: AnswerEnd | undefined;
      /** A resumable run its owner stopped (what was written is kept, interrupted). */
      stopped?: true | undefined;
    }
  /** A tool call waiting for the user's decision (only with `approvals: 'ask'`; issue 33). */
  | { type: 'approval'; approval: ToolApproval }
  /** The decision on it: the user's, or `expired` when none came in time. */
  | { type: 'approval-decided'; id: string; decision: 'approve' | 'deny' | 'always' | 'expired' };

/** What the user is asked to decide: an MCP server's tool, and the arguments it would get. */
export interface ToolApproval {
  id: string;
  server: string;
  tool: string;
  arguments: unknown;
}

/** How a completed answer ended (absent after an error): why the model stopped, and its usage. */
export interface AnswerEnd {
  /** Why the chat's last model call stopped. */
  finishReason: FinishReason;
  /** Summed over every model call of the chat (tool steps included). */
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  reasoningTokens: number | undefined;
}

export type ChatErrorCode =
  | 'model_not_configured'
  | 'model_downloading'
  | 'model_unreachable'
  /** The model server ended the answer itself before its end (finish reason `abort`, `error`…). */
  | 'model_stopped'
  | 'model_error'
  | 'model_timeout'
  | 'model_bad_response'
  | 'database_unavailable'
  /** Every pooled database connection stayed in use for DB_POOL_WAIT_MS: try again shortly. */
  | 'busy'
  | 'shutting_down'
  | 'turn_lost'
  /** A resumable run's answer took longer than ANSWER_MAX_SECONDS. */
  | 'answer_timeout'
  /** The process generating a resumable run stopped (it died) before the answer's end. */
  | 'run_interrupted'
  | 'internal_error';

/** The abort reason the HTTP edge gives when the server is stopping (not the client leaving). */
export const SHUTDOWN = 'shutdown';

/** The abort reason of a resumable run its owner stopped (POST …/runs/{run_id}/stop). */
export const STOPPED = 'stopped';

export interface ChatRequest {
  userId: string;
  message: string;
  showThinking: boolean;
  /** The request's image, already decoded into its own temporary file; this request only. */
  image?: RequestImage | undefined;
  /** Reasoning as `reasoning` events rather than `<think>` fragments (showThinking is then moot). */
  separateReasoning?: boolean | undefined;
  /** The run's id, when the caller must name it before the answer starts; default: a new one. */
  runId?: string | undefined;
  /**
   * A conversation the client keeps itself (the OpenAI-compatible door): it replaces the stored
   * history, and the turn is recorded as a run without being added to that history.
   */
  conversation?: ClientConversation | undefined;
  /**
   * The conversation the turn goes to (already checked to be the user's); default: the user's
   * current one. Ignored with `conversation`.
   */
  conversationId?: string | undefined;
  /**
   * The turn the question follows (an edited question, a regenerated answer: a new version
   * beside the turn that followed it before), null for a new first question; default: the
   * conversation's leaf. Already checked to be a turn of that conversation.
   */
  parentRunId?: string | null | undefined;
  /** Limits the client set on each model call. */
  callSettings?: CallSettings | undefined;
  /**
   * 'ask': the door shows a tool call that needs the user's approval and sends the decision
   * (POST /users/{user_id}/approvals/{id}); 'refuse' (default): such a call is not run and the
   * model is told it was not approved.
   */
  approvals?: 'ask' | 'refuse' | undefined;
  /**
   * Asked once the user's turn is taken, before the model is: false drops the chat, which then
   * ends with no event and stores nothing. An automation's run may wait for the turn as long as
   * a chat's time limit; its automation deleted meanwhile, its prompt is not answered at all
   * (its tools would act for an automation the user has just stopped).
   */
  stillWanted?: (() => Promise<boolean>) | undefined;
}

export interface ClientConversation {
  /** The client's own system prompt, placed after Parley's. */
  instructions: string | undefined;
  /** The conversation, oldest first, ending with the user's message (`message` is its text). */
  messages: ModelMessage[];
}

export interface CallSettings {
  maxOutputTokens?: number | undefined;
  temperature?: number | undefined;
}

/** A handle to a request's image: the HTTP edge owns the file and removes it. */
export interface RequestImage {
  path: string;
  mediaType: string;
  bytes: number;
}

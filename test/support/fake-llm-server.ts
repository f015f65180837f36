import type { IncomingMessage, ServerResponse } from 'node:http';
import { type BodyEnding, endBody } from './body-endings.ts';
import {
  assertNone,
  listen,
  type RecordedRequest,
  readRequest,
  sendJson,
  type UnexpectedRequest,
} from './fake-http.ts';
import { estimateTokens, turnChunks, turnCompletion } from './fake-llm/chat-completion.ts';
import { embeddingInputs, embeddingsResponse } from './fake-llm/embeddings.ts';
import { foldRecording, loadRecording } from './fake-llm/recording.ts';
import { type ErrorReply, openAiError, type Reply } from './fake-llm/reply.ts';
import { type WriteControl, writeJson, writeSse } from './fake-llm/stream-writer.ts';

export type { RecordedRequest, UnexpectedRequest } from './fake-http.ts';
export { type Reply, reply } from './fake-llm/reply.ts';

/** The parts of a chat-completions request body the fake reads; the rest stays in `request.body`. */
export interface ChatCompletionRequest {
  model: string;
  messages: Array<{ role: string; content?: unknown; tool_calls?: unknown; tool_call_id?: string }>;
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  tools?: Array<{ type: string; function: { name: string; parameters?: unknown } }>;
  [key: string]: unknown;
}

/** How one chat request ended: the client hanging up early is what abort tests look for. */
export type ChatOutcome = 'completed' | 'client-closed' | 'server-disconnected';

/** One embeddings request: `client-closed` when the client hung up before the answer came. */
export interface EmbeddingsCall {
  input: string[];
  outcome: 'pending' | 'answered' | 'client-closed' | 'server-disconnected';
}

export interface ChatExchange {
  request: RecordedRequest;
  body: ChatCompletionRequest;
  outcome: ChatOutcome | 'pending';
  ended: Promise<ChatOutcome>;
  /** Bytes of a never-ending event (`endlessEvent`) written before the response closed. */
  endlessBytes: number;
}

/** A reply, or a function computing one from the request (undefined = not scripted). */
export type ReplySource = Reply | ((request: ChatCompletionRequest) => Reply | undefined);

export interface FakeLlmServerOptions {
  /** When set, every request must carry `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Vector length when a request names no `dimensions`; default 384. */
  embeddingDimension?: number;
  /** Ids listed by `GET /v1/models`. */
  models?: string[];
  /**
   * Chooses the vector of a text, to build a case a real model might produce (a nearest
   * neighbour without the query's words, a zero vector); default: a hashed bag of words.
   */
  embed?: (text: string, dimension: number) => number[];
}

export interface FakeLlmServer {
  /** Base URL ending in `/v1`, ready for `LLM_BASE_URL` or `createOpenAICompatible({ baseURL })`. */
  url: string;
  requests: RecordedRequest[];
  unexpected: UnexpectedRequest[];
  chats: ChatExchange[];
  /** Every valid embeddings request, in order, with its texts and how it ended. */
  embeddingsCalls: EmbeddingsCall[];
  /** Chat requests whose client closed the connection before the response finished. */
  readonly closedEarly: ChatExchange[];
  /** Scripted replies not consumed yet. */
  readonly pendingReplies: number;
  /** Queues replies, consumed one per chat-completions request (FIFO). */
  enqueue(...replies: ReplySource[]): void;
  /** Answers chat requests once the queue is empty (e.g. for multi-step tool loops). */
  respond(source: ReplySource): void;
  /** Makes the next embeddings request(s) fail with these errors, one each. */
  failEmbeddings(...errors: ErrorReply[]): void;
  /** Ends the next embeddings answer(s) other than whole (test/support/body-endings.ts), one each. */
  endEmbeddings(...endings: BodyEnding[]): void;
  /** Answers embeddings requests this long after they arrive (a busy model server); 0: at once. */
  delayEmbeddings(ms: number): void;
  /** Resolves with the first chat request the client closed early; rejects after `timeoutMs`. */
  waitForClientClose(timeoutMs?: number): Promise<ChatExchange>;
  assertNoUnexpected(): void;
  assertAllConsumed(): void;
  close(): Promise<void>;
}

export async function startFakeLlmServer(
  options: FakeLlmServerOptions = {},
): Promise<FakeLlmServer> {
  const { apiKey, embeddingDimension = 384, models = ['fake-chat', 'fake-embed'], embed } = options;
  const requests: RecordedRequest[] = [];
  const unexpected: UnexpectedRequest[] = [];
  const chats: ChatExchange[] = [];
  const embeddingsCalls: EmbeddingsCall[] = [];
  let embeddingsDelayMs = 0;
  const queue: ReplySource[] = [];
  const embeddingErrors: ErrorReply[] = [];
  const embeddingEndings: BodyEnding[] = [];
  const closeWaiters = new Set<(exchange: ChatExchange) => void>();
  let fallback: ReplySource | undefined;
  let shuttingDown = false;
  let sequence = 0;

  const refuse = (res: ServerResponse, req: RecordedRequest, status: number, reason: string) => {
    unexpected.push({ method: req.method, path: req.path, reason });
    sendJson(res, status, openAiError(status, { message: `fake-llm-server: ${reason}` }));
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = await readRequest(req);
    requests.push(request);
    if (apiKey !== undefined && request.headers.authorization !== `Bearer ${apiKey}`) {
      return refuse(res, request, 401, 'missing or wrong bearer token');
    }
    const route = `${request.method} ${request.path}`;
    if (route === 'POST /v1/chat/completions') return chat(request, res);
    if (route === 'POST /v1/embeddings') return embeddings(request, res);
    if (route === 'GET /v1/models') {
      const data = models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'fake' }));
      return sendJson(res, 200, { object: 'list', data });
    }
    unexpected.push({ method: request.method, path: request.path, reason: 'no such route' });
    sendJson(
      res,
      404,
      openAiError(404, { message: `Invalid URL (${route})`, code: 'unknown_url' }),
    );
  }

  async function chat(request: RecordedRequest, res: ServerResponse): Promise<void> {
    const body = request.body as ChatCompletionRequest | undefined;
    if (typeof body?.model !== 'string' || !Array.isArray(body.messages) || !body.messages.length) {
      return refuse(res, request, 400, 'chat request without model or messages');
    }
    const control = track(request, body, res);
    const source = queue.shift() ?? fallback;
    const scripted = typeof source === 'function' ? source(body) : source;
    if (scripted === undefined)
      return refuse(res, request, 500, 'no scripted reply for this chat request');
    if (scripted.kind === 'http-error') {
      return sendJson(res, scripted.status, scripted.body, scripted.headers);
    }
    const n = ++sequence;
    let toolCallCount = 0;
    const ctx = {
      id: `chatcmpl-fake-${n}`,
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      includeUsage: body.stream_options?.include_usage === true,
      promptTokens: estimateTokens(JSON.stringify(body.messages)),
      nextToolCallId: () => `call_fake_${n}_${++toolCallCount}`,
    };
    if (scripted.kind === 'replay') {
      const payloads = await loadRecording(scripted.path);
      if (body.stream) return writeSse(res, payloads, scripted, control);
      return writeJson(res, foldRecording(payloads), scripted, control);
    }
    if (body.stream) {
      const payloads = turnChunks(scripted, ctx).map((chunk) => JSON.stringify(chunk));
      return writeSse(res, payloads, scripted, control);
    }
    return writeJson(res, turnCompletion(scripted, ctx), scripted, control);
  }

  /** Records how the exchange ends; the response's 'close' before finishing means someone hung up. */
  function track(request: RecordedRequest, body: ChatCompletionRequest, res: ServerResponse) {
    const abort = new AbortController();
    let droppedByServer = false;
    let settle: (outcome: ChatOutcome) => void = () => {};
    const exchange: ChatExchange = {
      request,
      body,
      outcome: 'pending',
      endlessBytes: 0,
      ended: new Promise((resolve) => {
        settle = resolve;
      }),
    };
    chats.push(exchange);
    res.on('close', () => {
      abort.abort();
      exchange.outcome = res.writableFinished
        ? 'completed'
        : droppedByServer || shuttingDown
          ? 'server-disconnected'
          : 'client-closed';
      settle(exchange.outcome);
      if (exchange.outcome === 'client-closed') for (const wake of closeWaiters) wake(exchange);
    });
    const control: WriteControl = {
      signal: abort.signal,
      dropConnection: () => {
        droppedByServer = true;
        res.socket?.destroySoon();
      },
      sentEndless: (bytes) => {
        exchange.endlessBytes += bytes;
      },
    };
    return control;
  }

  function embeddings(request: RecordedRequest, res: ServerResponse) {
    const answer = embeddingsResponse(request.body, embeddingDimension, embed);
    if (answer === undefined) {
      return refuse(res, request, 400, 'embeddings request without model or input');
    }
    const failure = embeddingErrors.shift();
    if (failure) return sendJson(res, failure.status, failure.body, failure.headers);
    const call: EmbeddingsCall = {
      input: embeddingInputs((request.body as { input?: unknown }).input) ?? [],
      outcome: 'pending',
    };
    embeddingsCalls.push(call);
    const ending = embeddingEndings.shift();
    const timer = setTimeout(
      () => (ending ? endBody(res, JSON.stringify(answer), ending) : sendJson(res, 200, answer)),
      embeddingsDelayMs,
    );
    res.on('close', () => {
      clearTimeout(timer);
      call.outcome = res.writableFinished
        ? 'answered'
        : shuttingDown
          ? 'server-disconnected'
          : 'client-closed';
    });
  }

  const server = await listen(handle, (req, error) => {
    unexpected.push({
      method: req.method ?? '?',
      path: req.url ?? '?',
      reason: `fake crashed: ${error}`,
    });
  });

  return {
    url: `${server.origin}/v1`,
    requests,
    unexpected,
    chats,
    embeddingsCalls,
    get closedEarly() {
      return chats.filter((exchange) => exchange.outcome === 'client-closed');
    },
    get pendingReplies() {
      return queue.length;
    },
    enqueue: (...replies) => {
      queue.push(...replies);
    },
    respond: (source) => {
      fallback = source;
    },
    failEmbeddings: (...errors) => {
      embeddingErrors.push(...errors);
    },
    endEmbeddings: (...endings) => {
      embeddingEndings.push(...endings);
    },
    delayEmbeddings: (ms) => {
      embeddingsDelayMs = ms;
    },
    waitForClientClose: (timeoutMs = 2000) => {
      const closed = chats.find((exchange) => exchange.outcome === 'client-closed');
      if (closed) return Promise.resolve(closed);
      return new Promise((resolve, fail) => {
        const wake = (exchange: ChatExchange) => {
          clearTimeout(timer);
          closeWaiters.delete(wake);
          resolve(exchange);
        };
        const timer = setTimeout(() => {
          closeWaiters.delete(wake);
          const outcomes =
            chats.map((exchange) => exchange.outcome).join(', ') || 'no chat requests';
          fail(new Error(`no client closed a chat request within ${timeoutMs} ms (${outcomes})`));
        }, timeoutMs);
        closeWaiters.add(wake);
      });
    },
    assertNoUnexpected: () => assertNone('fake LLM server', unexpected),
    assertAllConsumed: () => {
      if (queue.length > 0)
        throw new Error(`${queue.length} scripted LLM replies were never requested`);
    },
    close: () => {
      shuttingDown = true;
      return server.close();
    },
  };
}

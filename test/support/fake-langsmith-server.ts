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
import { decodeBody, type MultipartPart, parseMultipart } from './fake-langsmith/multipart.ts';
import { type ServerInfoOverrides, serverInfo } from './fake-langsmith/server-info.ts';

export type { RecordedRequest, UnexpectedRequest } from './fake-http.ts';

export type RunOperation = 'post' | 'patch';

/** A run as the fake assembled it from every post and patch it received for that id. */
export interface RecordedRun {
  id: string;
  /** Arrival order; the client folds a post and its patch into one post when both are queued together. */
  operations: RunOperation[];
  name?: string;
  run_type?: string;
  trace_id?: string;
  parent_run_id?: string;
  dotted_order?: string;
  session_name?: string;
  inputs?: Record<string, unknown>;
  outputs?: Record<string, unknown>;
  error?: string;
  start_time?: string | number;
  end_time?: string | number;
  attachments: Record<string, Buffer>;
  [field: string]: unknown;
}

export interface RecordedFeedback {
  id?: string;
  run_id?: string | null;
  trace_id?: string;
  key: string;
  score?: number | boolean | null;
  comment?: string;
  /** `/feedback` for a direct post, `/runs/multipart` when the client batched it with runs. */
  via: '/feedback' | '/runs/multipart';
  [field: string]: unknown;
}

/** A PATCH /feedback/{id} the fake applied: only these fields may change. */
export interface FeedbackUpdate {
  id: string;
  score?: number | boolean | null;
  value?: unknown;
  correction?: unknown;
  comment?: string | null;
}

export type FailureTarget = 'feedback' | 'runs' | 'info';

export interface FakeLangSmithServerOptions {
  /** When set, every request must carry `x-api-key: <apiKey>`. */
  apiKey?: string;
  /** Changes to what `GET /info` answers, e.g. to turn compression off. */
  info?: ServerInfoOverrides;
}

export interface FakeLangSmithServer {
  /** Origin for `apiUrl` / `LANGSMITH_ENDPOINT`. */
  url: string;
  requests: RecordedRequest[];
  unexpected: UnexpectedRequest[];
  runs: Map<string, RecordedRun>;
  /** One entry per feedback id, as it stands after any updates (PATCH). */
  feedback: RecordedFeedback[];
  /** Every update applied, in arrival order. */
  feedbackUpdates: FeedbackUpdate[];
  /** Creates refused because the id was taken (409), as after a create whose answer was lost. */
  duplicateCreates: number;
  /** The next `count` requests to `target` answer `status` (the client retries 5xx and 429). */
  failNext(target: FailureTarget, count?: number, status?: number): void;
  /**
   * The next `count` requests to `target` are refused with a 422 whose body quotes what was
   * sent, as LangSmith's validation errors do (FastAPI's `input`), headers too, as a proxy's
   * may: users' words, and the API key, in an answer.
   */
  refuseEchoingNext(target: FailureTarget, count?: number): void;
  /**
   * Ends the next POST /feedback's answer this way (test/support/body-endings.ts): the
   * feedback is stored and its 200 answer does not arrive whole; an HTML 502 stores nothing.
   */
  endNextFeedback(ending: BodyEnding): void;
  /** The next request to `target` is answered only after `ms` (a slow send still under way). */
  slowNext(target: FailureTarget, ms: number): void;
  /**
   * The next request to `target` is read and never answered (nor recorded), as a server that
   * hangs; resolves with its body once it has arrived. Its connection is cut at `close`.
   */
  holdNext(target: FailureTarget): Promise<unknown>;
  waitForRun(match: (run: RecordedRun) => boolean, timeoutMs?: number): Promise<RecordedRun>;
  waitForFeedback(
    match: (feedback: RecordedFeedback) => boolean,
    timeoutMs?: number,
  ): Promise<RecordedFeedback>;
  assertNoUnexpected(): void;
  close(): Promise<void>;
}

const failureTargets: Record<string, FailureTarget> = {
  'GET /info': 'info',
  'POST /feedback': 'feedback',
  'POST /runs/multipart': 'runs',
  'POST /runs': 'runs',
  'POST /runs/batch': 'runs',
  'PATCH /runs/:id': 'runs',
  'PATCH /feedback/:id': 'feedback',
};

const UPDATABLE_FEEDBACK_FIELDS = new Set(['score', 'value', 'correction', 'comment']);

export async function startFakeLangSmithServer(
  options: FakeLangSmithServerOptions = {},
): Promise<FakeLangSmithServer> {
  const info = serverInfo(options.info);
  const requests: RecordedRequest[] = [];
  const unexpected: UnexpectedRequest[] = [];
  const runs = new Map<string, RecordedRun>();
  const feedback: RecordedFeedback[] = [];
  const feedbackUpdates: FeedbackUpdate[] = [];
  let duplicateCreates = 0;
  const failures: Array<{ target: FailureTarget; status: number; echo?: boolean }> = [];
  const delays: Array<{ target: FailureTarget; ms: number }> = [];
  const feedbackEndings: BodyEnding[] = [];
  const stalled: ServerResponse[] = [];
  const holds: Array<{ target: FailureTarget; arrived: (body: unknown) => void }> = [];

  // LangSmith's API is FastAPI: errors are `{ "detail": ... }`.
  const refuse = (res: ServerResponse, req: RecordedRequest, status: number, reason: string) => {
    unexpected.push({ method: req.method, path: req.path, reason });
    sendJson(res, status, { detail: `fake-langsmith-server: ${reason}` });
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = await readRequest(req);
    requests.push(request);
    if (options.apiKey !== undefined && request.headers['x-api-key'] !== options.apiKey) {
      return refuse(res, request, 401, 'missing or wrong x-api-key');
    }
    const route = `${request.method} ${request.path
      .replace(/^\/runs\/[0-9a-f-]{36}$/, '/runs/:id')
      .replace(/^\/feedback\/[0-9a-f-]{36}$/, '/feedback/:id')}`;
    const target = failureTargets[route];
    const slow = delays.findIndex((d) => d.target === target);
    if (slow >= 0) {
      const [delay] = delays.splice(slow, 1);
      await new Promise((resolve) => setTimeout(resolve, delay?.ms));
    }
    const failure = failures.findIndex((f) => f.target === target);
    const injected = failure >= 0 ? failures.splice(failure, 1)[0] : undefined;
    if (injected?.echo) return sendJson(res, injected.status, validationError(request));
    if (injected) return sendJson(res, injected.status, { detail: 'injected failure' });
    const hold = holds.findIndex((h) => h.target === target);
    if (hold >= 0) return holds.splice(hold, 1)[0]?.arrived(request.body);
    const problems: string[] = [];
    switch (route) {
      case 'GET /info':
        return sendJson(res, 200, info);
      case 'POST /feedback': {
        const ending = feedbackEndings.shift();
        if (ending) stalled.push(res);
        if (ending === 'html-502') return endBody(res, '', ending);
        const id = (request.body as { id?: unknown } | undefined)?.id;
        if (typeof id === 'string' && feedback.some((f) => f.id === id)) {
          // The client sends our own id; a second create of it is refused, not a second record.
          duplicateCreates++;
          return sendJson(res, 409, { detail: 'Feedback with this id already exists' });
        }
        recordFeedback(request.body, '/feedback', problems);
        if (problems.length > 0) return refuse(res, request, 422, problems.join('; '));
        const created = { ...(request.body as object), created_at: new Date().toISOString() };
        if (ending) return endBody(res, JSON.stringify(created), ending);
        return sendJson(res, 200, created);
      }
      case 'PATCH /feedback/:id':
        return updateFeedback(request, res);
      case 'POST /runs/multipart':
        ingestMultipart(request, problems);
        break;
      case 'POST /runs':
        recordRun('post', request.body, problems);
        break;
      case 'PATCH /runs/:id':
        recordRun(
          'patch',
          { ...(request.body as object), id: request.path.slice('/runs/'.length) },
          problems,
        );
        break;
      case 'POST /runs/batch': {
        const batch = request.body as { post?: unknown[]; patch?: unknown[] } | undefined;
        for (const run of batch?.post ?? []) recordRun('post', run, problems);
        for (const run of batch?.patch ?? []) recordRun('patch', run, problems);
        break;
      }
      default:
        return refuse(res, request, 404, 'no such route');
    }
    if (problems.length > 0) return refuse(res, request, 422, problems.join('; '));
    // Ingestion is queued server-side: any 2xx satisfies the client.
    sendJson(res, 202, {});
  }

  function ingestMultipart(request: RecordedRequest, problems: string[]): void {
    let parts: MultipartPart[] | undefined;
    try {
      const body = decodeBody(request.rawBody, request.headers['content-encoding']);
      parts = parseMultipart(body, request.headers['content-type']);
    } catch (error) {
      problems.push(`undecodable body: ${error}`);
      return;
    }
    if (parts === undefined) {
      problems.push('not a multipart/form-data body');
      return;
    }
    for (const part of parts) {
      const [kind, id, field] = part.name.split('.');
      if ((kind === 'post' || kind === 'patch') && id && field === undefined) {
        // Multipart ingestion places each operation in its trace by these two fields.
        const run = part.json as Partial<RecordedRun> | undefined;
        if (!run?.trace_id || !run.dotted_order) {
          problems.push(`${kind} of run ${id} without trace_id or dotted_order`);
        }
        recordRun(kind, part.json, problems);
      } else if ((kind === 'post' || kind === 'patch') && id && field) {
        // inputs, outputs, events, extra, error, serialized travel as parts of their own.
        Object.assign(runOf(id), { [field]: part.json });
      } else if (kind === 'attachment' && id && field) {
        runOf(id).attachments[field] = part.data;
      } else if (kind === 'feedback' && id) {
        recordFeedback(part.json, '/runs/multipart', problems);
      } else {
        problems.push(`unknown multipart part "${part.name}"`);
      }
    }
  }

  /** PATCH /feedback/{id}: LangSmith's FeedbackUpdate (score, value, correction, comment). */
  function updateFeedback(request: RecordedRequest, res: ServerResponse) {
    const id = request.path.slice('/feedback/'.length);
    const stored = feedback.find((f) => f.id === id);
    if (!stored) return refuse(res, request, 404, 'update of a feedback never created');
    const body = request.body as Record<string, unknown> | undefined;
    const fields = Object.keys(body ?? {});
    const unknown = fields.filter((field) => !UPDATABLE_FEEDBACK_FIELDS.has(field));
    if (body === undefined || fields.length === 0 || unknown.length > 0) {
      return refuse(res, request, 422, `not a feedback update: ${JSON.stringify(body)}`);
    }
    Object.assign(stored, body);
    feedbackUpdates.push({ id, ...body });
    sendJson(res, 200, { ...stored, modified_at: new Date().toISOString() });
  }

  function runOf(id: string): RecordedRun {
    let run = runs.get(id);
    if (run === undefined) {
      run = { id, operations: [], attachments: {} };
      runs.set(id, run);
    }
    return run;
  }

  function recordRun(operation: RunOperation, payload: unknown, problems: string[]): void {
    const fields = payload as Partial<RecordedRun> | undefined;
    if (typeof fields?.id !== 'string') {
      problems.push(`${operation} without a run id`);
      return;
    }
    const run = runOf(fields.id);
    const { operations, attachments } = run;
    Object.assign(run, fields, { operations: [...operations, operation], attachments });
  }

  function recordFeedback(
    payload: unknown,
    via: RecordedFeedback['via'],
    problems: string[],
  ): void {
    const fields = payload as Partial<RecordedFeedback> | undefined;
    if (typeof fields?.key !== 'string' || !(fields.run_id || fields.session_id)) {
      problems.push('feedback without a key, or without a run_id or session_id');
      return;
    }
    feedback.push({ ...fields, key: fields.key, via });
  }

  const server = await listen(handle, (req, error) => {
    unexpected.push({
      method: req.method ?? '?',
      path: req.url ?? '?',
      reason: `fake crashed: ${error}`,
    });
  });

  return {
    url: server.origin,
    requests,
    unexpected,
    runs,
    feedback,
    feedbackUpdates,
    slowNext: (target, ms) => {
      delays.push({ target, ms });
    },
    get duplicateCreates() {
      return duplicateCreates;
    },
    failNext: (target, count = 1, status = 503) => {
      for (let i = 0; i < count; i++) failures.push({ target, status });
    },
    refuseEchoingNext: (target, count = 1) => {
      for (let i = 0; i < count; i++) failures.push({ target, status: 422, echo: true });
    },
    endNextFeedback: (ending) => {
      feedbackEndings.push(ending);
    },
    holdNext: (target) =>
      new Promise((arrived) => {
        holds.push({ target, arrived });
      }),
    waitForRun: (match, timeoutMs) => until(() => [...runs.values()].find(match), 'run', timeoutMs),
    waitForFeedback: (match, timeoutMs) => until(() => feedback.find(match), 'feedback', timeoutMs),
    assertNoUnexpected: () => assertNone('fake LangSmith server', unexpected),
    close: () => {
      for (const res of stalled) res.destroy();
      return server.close();
    },
  };
}

/**
 * FastAPI's 422, whose problems quote the input they found wanting; here the whole request,
 * its headers too, as a proxy that refuses a request may quote it.
 */
function validationError(request: RecordedRequest) {
  const body =
    request.body ??
    decodeBody(request.rawBody, request.headers['content-encoding']).toString('utf8');
  const input = { method: request.method, path: request.path, headers: request.headers, body };
  return { detail: [{ type: 'value_error', loc: ['body'], msg: 'refused by the test', input }] };
}

/** Polls, because the client sends runs from background batches on its own schedule. */
async function until<T>(find: () => T | undefined, what: string, timeoutMs = 2000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline)
      throw new Error(`no matching ${what} reached the fake within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

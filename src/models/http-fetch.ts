import { Agent, type Dispatcher, interceptors } from 'undici';

/**
 * A `fetch` for the model server's streamed answers, on undici's dispatcher (the engine under
 * Node's own fetch) without the fetch layer on top.
 *
 * Why not the built-in fetch: the provider would read each token through fetch's own body
 * stream, and the burst merger (coalesce-sse-bursts.ts) would be one more web-stream stage per
 * token behind it. The AI SDK's provider only needs what the Fetch standard gives it: a
 * `Response` with status, headers and a web-stream body, rejections that are
 * `TypeError('fetch failed')` with the cause, a body cut short erroring with
 * `TypeError('terminated')`, and the abort signal's reason on abort. This gives exactly that
 * from undici's handler callbacks, and `transformBody` rewrites each network read on the way.
 *
 * Why undici and not `node:http`: until issue 25 the same was hand-written on `node:http`,
 * with its own redirects, decompression and retry; undici is maintained by Node's HTTP team,
 * and its redirect (credentials dropped on a change of origin, 303 and POST-after-301/302
 * become GET) and decompression are used as they are. Measured side by side, a chat costs the
 * same within 5 % (per chat +3 % / −1 %, per token +2 % on each engine); the bare transport
 * costs ~15 µs more a token than `node:http` did, about what the built-in fetch costs, so
 * that is undici's parser and socket handling (bench/RESULTS.md, "Model-server client on
 * undici").
 *
 * Scope: what an API client sends (a string, bytes or no body; `http:`/`https:` URLs; redirects
 * followed). Anything else (a `Request` object, a streamed or form body, other protocols,
 * `redirect: 'manual'`) goes to the built-in fetch, its body through `transformBody` all the
 * same: an answer bound (answer-bound.ts) holds whatever a client library sends, a multipart
 * upload to LangSmith or Telegram as well as JSON. No compression is asked for (a compressed
 * token stream costs CPU on both sides for a few bytes a token); one sent anyway is decoded.
 */
export interface HttpFetchOptions {
  /** Rewrites the response body's reads; `end` returns what is left when it closes. */
  transformBody?: (headers: Headers) => BodyTransform | undefined;
}

export interface BodyTransform {
  /** May throw: the body then ends with that error, and the request is aborted. */
  chunk(bytes: Buffer): Uint8Array | undefined;
  end(): Uint8Array | undefined;
}

const NULL_BODY_STATUS = new Set([204, 205, 304]);

export function createHttpFetch(options: HttpFetchOptions = {}): typeof fetch {
  // One Agent: a pool per origin, sockets kept alive, no cap (one stream per chat).
  const dispatcher = new Agent().compose(
    retryOnStaleSocket,
    interceptors.decompress({ skipErrorResponses: false }),
    interceptors.redirect({ maxRedirections: 20, throwOnMaxRedirect: true }),
  );
  return async function httpFetch(input, init = {}) {
    const body = init.body;
    const plainBody =
      body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array;
    const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : null;
    if (
      !url ||
      !plainBody ||
      (url.protocol !== 'http:' && url.protocol !== 'https:') ||
      (init.redirect !== undefined && init.redirect !== 'follow')
    ) {
      return transformed(await fetch(input, init), options);
    }
    const signal = init.signal ?? undefined;
    signal?.throwIfAborted();
    const headers: Record<string, string> = {};
    for (const [name, value] of new Headers(init.headers)) headers[name] = value;
    headers.accept ??= '*/*';
    const request: Dispatcher.DispatchOptions = {
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: (init.method ?? 'GET').toUpperCase() as Dispatcher.HttpMethod,
      headers,
      body: body ?? null,
    };
    return send(dispatcher, request, signal, options);
  };
}

/**
 * The built-in fetch's response with its body read through `transformBody`: a chunk the
 * transform refuses errors the body with its error and cancels the rest (the connection is
 * closed), as on undici's path.
 */
function transformed(response: Response, options: HttpFetchOptions): Response {
  const transform = response.body ? options.transformBody?.(response.headers) : undefined;
  if (!transform || !response.body) return response;
  const body = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const out = transform.chunk(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if (out && out.byteLength > 0) controller.enqueue(out);
      },
      flush(controller) {
        const rest = transform.end();
        if (rest && rest.byteLength > 0) controller.enqueue(rest);
      },
    }),
  );
  const result = new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  Object.defineProperties(result, {
    url: { value: response.url },
    redirected: { value: response.redirected },
  });
  return result;
}

/**
 * Sends a request again when the kept-alive connection it went out on turns out to have been
 * closed by the server: it fails before any answer (so the server never read it), on a socket
 * that had carried an earlier answer. undici does not retry a POST itself; its check of an
 * idle socket before reuse sees a close that had already arrived, not one still on its way.
 * A new connection that fails is a failure, and each retry uses up one idle connection, so
 * this ends. Applies to each hop of a redirect on its own. undici reports such a close as
 * `UND_ERR_SOCKET` with the socket's byte counts; a reset it reports as a bare `ECONNRESET`
 * carries none, so it cannot be told from a new connection's and is not sent again (the
 * SDK's own retries, `LLM_MAX_RETRIES`, still apply to it).
 */
const retryOnStaleSocket: Dispatcher.DispatcherComposeInterceptor = (dispatch) =>
  function dispatchWithRetry(request, handler) {
    let answered = false;
    return dispatch(request, {
      onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
      onResponseStart: (controller, status, headers, statusText) => {
        answered = true;
        handler.onResponseStart?.(controller, status, headers, statusText);
      },
      onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
      onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
      onResponseError: (controller, error) => {
        const { code, socket } = error as { code?: string; socket?: { bytesRead?: number } };
        if (!answered && code === 'UND_ERR_SOCKET' && (socket?.bytesRead ?? 0) > 0) {
          dispatchWithRetry(request, handler);
          return;
        }
        handler.onResponseError?.(controller, error);
      },
    });
  };

/**
 * Dispatches one request; resolves with the `Response` once its head is in. The body is a web
 * stream fed straight from undici's callbacks.
 *
 * undici hands over each HTTP chunk of a chunked body on its own, even when one network read
 * brought several; the built-in fetch hands over what one read brought. So chunks are gathered
 * until the parser is done with the read (a microtask later) and passed on together: a burst
 * of tokens stays one piece, which is what the burst merger needs.
 */
function send(
  dispatcher: Dispatcher,
  request: Dispatcher.DispatchOptions,
  signal: AbortSignal | undefined,
  options: HttpFetchOptions,
): Promise<Response> {
  return new Promise((resolve, reject) => {
    let controller: Dispatcher.DispatchController | undefined;
    let body: ReadableStreamDefaultController<Uint8Array> | undefined;
    let transform: BodyTransform | undefined;
    let settled = false;
    let ended = false;
    let gathered: Buffer[] = [];
    /** The redirect interceptor's list of URLs asked, the one that answered last. */
    let history: URL[] | undefined;
    const flush = () => {
      if (gathered.length === 0 || ended || !body) return;
      const bytes = gathered.length === 1 ? (gathered[0] as Buffer) : Buffer.concat(gathered);
      gathered = [];
      let out: Uint8Array | undefined;
      try {
        out = transform ? transform.chunk(bytes) : bytes;
      } catch (error) {
        // The transform refuses the body (an event too large to read): it ends with that
        // error, as a body cut short does, and no more of it is read.
        finish(error);
        controller?.abort(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      if (out && out.byteLength > 0) body.enqueue(out);
      if ((body.desiredSize ?? 1) <= 0) controller?.pause();
    };
    /** Ends the body: what arrived before the end or the failure is delivered first. */
    const finish = (error?: unknown) => {
      flush();
      signal?.removeEventListener('abort', onAbort);
      if (ended || !body) return;
      ended = true;
      if (error !== undefined) return body.error(error);
      const rest = transform?.end();
      if (rest && rest.byteLength > 0) body.enqueue(rest);
      body.close();
    };
    const onAbort = () => {
      if (!settled) {
        settled = true;
        reject(signal?.reason);
      } else finish(signal?.reason);
      controller?.abort(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });

    dispatcher.dispatch(request, {
      onRequestStart(started, context: { history?: URL[] }) {
        controller = started;
        if (signal?.aborted) started.abort(signal.reason);
        history = context?.history;
      },
      onResponseStart(_controller, status, rawHeaders, statusText) {
        const headers = new Headers();
        for (const name in rawHeaders) {
          const value = rawHeaders[name];
          if (Array.isArray(value)) for (const item of value) headers.append(name, item);
          else if (value !== undefined) headers.append(name, value);
        }
        if (status > 599) {
          controller?.abort(new Error(`HTTP status ${status}`));
          return;
        }
        const nullBody = NULL_BODY_STATUS.has(status) || request.method === 'HEAD';
        transform = nullBody ? undefined : options.transformBody?.(headers);
        const stream = nullBody
          ? null
          : new ReadableStream<Uint8Array>(
              {
                start: (streamController) => {
                  body = streamController;
                },
                pull: () => controller?.resume(),
                cancel: (reason) => {
                  ended = true;
                  signal?.removeEventListener('abort', onAbort);
                  controller?.abort(reason ?? new Error('body cancelled'));
                },
              },
              { highWaterMark: 1 },
            );
        const response = new Response(stream, { status, statusText: statusText ?? '', headers });
        // A constructed Response has neither; the provider reads neither, a caller might.
        const answered = history?.at(-1);
        Object.defineProperties(response, {
          url: { value: answered ? answered.href : `${request.origin}${request.path}` },
          redirected: { value: (history?.length ?? 0) > 1 },
        });
        settled = true;
        if (nullBody) signal?.removeEventListener('abort', onAbort);
        resolve(response);
      },
      onResponseData(_controller, chunk) {
        if (gathered.push(chunk) === 1) queueMicrotask(flush);
      },
      onResponseEnd() {
        finish();
      },
      onResponseError(_controller, error) {
        if (!settled) {
          settled = true;
          signal?.removeEventListener('abort', onAbort);
          reject(new TypeError('fetch failed', { cause: error }));
          return;
        }
        // A body cut before its end (the server or the network went away), as fetch says it.
        finish(signal?.aborted ? signal.reason : new TypeError('terminated', { cause: error }));
      },
    });
  });
}

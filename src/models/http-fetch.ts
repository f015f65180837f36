import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/**
 * A `fetch` for the model server's streamed answers, on `node:http` instead of Node's
 * built-in fetch (undici).
 *
 * Why: the chat reads one network chunk per token, and undici's fetch spends more CPU per
 * chunk (its body is a web stream fed through its own fetch machinery) and per request than
 * a plain `node:http` response does (bench/sse-floor.ts, `relay` against `relay-http`). The
 * AI SDK's provider only needs what the Fetch standard gives it: a `Response` with status,
 * headers and a web-stream body, rejections that are `TypeError('fetch failed')` with the
 * socket error as `cause`, and the abort signal's reason on abort. This gives exactly that,
 * and optionally lets `transformBody` rewrite the body's bytes on the way (see
 * coalesce-sse-bursts.ts) without adding a web-stream stage for it.
 *
 * Scope: what an API client sends (a string, bytes or no body; `http:`/`https:` URLs),
 * following redirects as fetch does (credentials dropped on a change of origin), and decoding
 * gzip, deflate and br bodies (though it asks for none). Anything else (a `Request` object, a
 * streamed or form body, other protocols) goes to the built-in fetch.
 */
export interface HttpFetchOptions {
  /** Rewrites the response body's chunks; `end` returns what is left when it closes. */
  transformBody?: (response: IncomingMessage) => BodyTransform | undefined;
}

export interface BodyTransform {
  chunk(bytes: Buffer): Uint8Array | undefined;
  end(): Uint8Array | undefined;
}

const MAX_REDIRECTS = 20;
const NULL_BODY_STATUS = new Set([204, 205, 304]);

export function createHttpFetch(options: HttpFetchOptions = {}): typeof fetch {
  // Keep-alive as the built-in fetch does, with no cap on sockets: one stream per chat.
  const agents = {
    'http:': new HttpAgent({ keepAlive: true }),
    'https:': new HttpsAgent({ keepAlive: true }),
  };
  return async function httpFetch(input, init = {}) {
    const body = init.body;
    const plainBody =
      body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array;
    const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : null;
    if (!url || !plainBody || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      return fetch(input, init);
    }
    const signal = init.signal ?? undefined;
    signal?.throwIfAborted();
    let method = (init.method ?? 'GET').toUpperCase();
    let payload: string | Uint8Array | undefined = body ?? undefined;
    const headers = new Headers(init.headers);
    let target = url;
    for (let hop = 0; ; hop++) {
      const response = await send(target, method, headers, payload, signal, agents);
      const location = response.headers.location;
      if (!isRedirect(response.statusCode) || !location || init.redirect === 'manual') {
        return toResponse(response, { url: target, method, redirected: hop > 0 }, signal, options);
      }
      discard(response);
      if (init.redirect === 'error' || hop >= MAX_REDIRECTS) {
        throw new TypeError('fetch failed', { cause: new Error('redirect not followed') });
      }
      // As fetch does: 303, and 301/302 after a POST, become a GET without a body.
      if (
        response.statusCode === 303 ||
        ((response.statusCode === 301 || response.statusCode === 302) && method === 'POST')
      ) {
        method = method === 'HEAD' ? 'HEAD' : 'GET';
        payload = undefined;
        headers.delete('content-type');
        headers.delete('content-length');
      }
      const next = new URL(location, target);
      // As fetch does: credentials never follow a redirect to another origin (the API key
      // would reach whichever host the redirect names).
      if (next.origin !== target.origin) {
        for (const name of ['authorization', 'proxy-authorization', 'cookie']) {
          headers.delete(name);
        }
      }
      target = next;
    }
  };
}

const isRedirect = (status: number | undefined) =>
  status === 301 || status === 302 || status === 303 || status === 307 || status === 308;

/**
 * Sends one request and resolves with the response head. A kept-alive connection that the
 * server closed while it lay idle fails as soon as it is used, before any answer; the server
 * never read the request, so it is sent again on another connection (as Node's documentation
 * advises with `reusedSocket`). Each such failure uses up one idle connection, so this ends.
 * Under load the event loop can be too late to see the server's close before reusing one.
 */
function send(
  url: URL,
  method: string,
  headers: Headers,
  body: string | Uint8Array | undefined,
  signal: AbortSignal | undefined,
  agents: Record<'http:' | 'https:', HttpAgent | HttpsAgent>,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const outgoing: Record<string, string> = {};
    for (const [name, value] of headers) outgoing[name] = value;
    // No accept-encoding: a compressed token stream costs CPU on both sides for a few bytes
    // a token. A server that compresses anyway is decoded.
    outgoing.accept ??= '*/*';
    if (body !== undefined) outgoing['content-length'] = String(Buffer.byteLength(body));
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
      method,
      headers: outgoing,
      agent: agents[url.protocol as 'http:' | 'https:'],
    });
    const onAbort = () => {
      request.destroy();
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    let answered = false;
    request.once('response', (response) => {
      answered = true;
      signal?.removeEventListener('abort', onAbort);
      resolve(response);
    });
    // Errors after the answer began are the body's (see bodyOf); the listener stays so that
    // none of them goes unhandled.
    request.on('error', (error: NodeJS.ErrnoException) => {
      signal?.removeEventListener('abort', onAbort);
      if (answered || signal?.aborted) return;
      answered = true;
      if (request.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE')) {
        resolve(send(url, method, headers, body, signal, agents));
        return;
      }
      reject(new TypeError('fetch failed', { cause: error }));
    });
    request.end(body);
  });
}

function toResponse(
  incoming: IncomingMessage,
  { url, method, redirected }: { url: URL; method: string; redirected: boolean },
  signal: AbortSignal | undefined,
  options: HttpFetchOptions,
): Response {
  const status = incoming.statusCode ?? 0;
  const headers = new Headers();
  const raw = incoming.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i] as string, raw[i + 1] as string);
  // Status outside 200–599 cannot be given to a Response; the built-in fetch fails on them too.
  if (status < 200 || status > 599) {
    incoming.destroy();
    throw new TypeError('fetch failed', { cause: new Error(`HTTP status ${status}`) });
  }
  const nullBody = NULL_BODY_STATUS.has(status) || method === 'HEAD';
  if (nullBody) discard(incoming);
  const response = new Response(nullBody ? null : bodyOf(incoming, signal, options), {
    status,
    statusText: incoming.statusMessage ?? '',
    headers,
  });
  // A constructed Response has neither; the provider reads neither, a caller might.
  Object.defineProperties(response, {
    url: { value: url.href },
    redirected: { value: redirected },
  });
  return response;
}

/**
 * The response body as a web stream, decoded, with the caller's transform applied.
 *
 * `node:http` hands over each HTTP chunk of a chunked body on its own, even when one network
 * read brought several; the built-in fetch hands over what one read brought. So chunks are
 * gathered until the parser is done with the read (a microtask later) and passed on together:
 * a burst of tokens stays one piece, which is what the burst merger needs.
 */
function bodyOf(
  incoming: IncomingMessage,
  signal: AbortSignal | undefined,
  options: HttpFetchOptions,
): ReadableStream<Uint8Array> {
  const decoder = decoderFor(incoming.headers['content-encoding']);
  const source = decoder ? incoming.pipe(decoder) : incoming;
  const transform = options.transformBody?.(incoming);
  let ended = false;
  let gathered: Buffer[] = [];
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const flush = () => {
          if (gathered.length === 0 || ended) return;
          const bytes = gathered.length === 1 ? (gathered[0] as Buffer) : Buffer.concat(gathered);
          gathered = [];
          const out = transform ? transform.chunk(bytes) : bytes;
          if (out && out.byteLength > 0) controller.enqueue(out);
          if ((controller.desiredSize ?? 1) <= 0) source.pause();
        };
        const finish = (error?: unknown) => {
          flush(); // what arrived before the end or the failure is delivered first, as fetch does
          signal?.removeEventListener('abort', onAbort);
          if (ended) return;
          ended = true;
          if (error !== undefined) return controller.error(error);
          const rest = transform?.end();
          if (rest && rest.byteLength > 0) controller.enqueue(rest);
          controller.close();
        };
        const onAbort = () => {
          finish(signal?.reason);
          incoming.destroy();
        };
        if (signal?.aborted) return onAbort(); // between the headers and this body
        signal?.addEventListener('abort', onAbort, { once: true });
        source.on('data', (bytes: Buffer) => {
          if (gathered.push(bytes) === 1) queueMicrotask(flush);
        });
        source.once('end', () => finish());
        // A body cut before its end (the server or the network went away), as undici says it.
        const cut = (cause: unknown) => finish(new TypeError('terminated', { cause }));
        source.on('error', cut);
        if (source !== incoming) incoming.on('error', cut);
        incoming.once('close', () => {
          if (!incoming.complete)
            cut(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }));
        });
      },
      pull() {
        source.resume();
      },
      cancel() {
        ended = true;
        incoming.destroy();
      },
    },
    { highWaterMark: 1 },
  );
}

/** Reads a body nobody wants to its end; a connection lost meanwhile is no one's error. */
function discard(incoming: IncomingMessage): void {
  incoming.on('error', () => {});
  incoming.resume();
}

function decoderFor(contentEncoding: string | undefined) {
  switch (contentEncoding?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return undefined;
  }
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnswerTooLargeError, createBoundedFetch } from '../../src/models/answer-bound.ts';
import { createHttpFetch } from '../../src/models/http-fetch.ts';

/**
 * Parley's fetch on undici's dispatcher against the built-in one, on the same real server:
 * whatever the provider can see (status, headers, body, redirects, errors, aborts, a body cut
 * short) must be the same. One known difference: a body decoded from gzip comes without its
 * `content-encoding` and `content-length` (undici's decompress interceptor drops them, since
 * they describe the bytes on the wire, not the body read); the provider reads neither.
 */
type Route = (req: IncomingMessage, body: string, res: ServerResponse) => void;

const routes: Record<string, Route> = {
  '/json': (_req, body, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-extra': 'a' });
    res.end(JSON.stringify({ echoed: body }));
  },
  '/error': (_req, _body, res) => {
    res.writeHead(429, 'Too Many', { 'content-type': 'application/json', 'retry-after': '3' });
    res.end('{"error":{"message":"slow down"}}');
  },
  '/empty': (_req, _body, res) => {
    res.writeHead(204);
    res.end();
  },
  '/gzip': (_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
    res.end(gzipSync('안녕하세요, compressed'));
  },
  '/moved-307': (_req, _body, res) => {
    res.writeHead(307, { location: '/json' });
    res.end();
  },
  '/moved-to-headers': (_req, _body, res) => {
    res.writeHead(307, { location: '/headers' });
    res.end();
  },
  '/headers': (req, _body, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ authorization: req.headers.authorization }));
  },
  '/moved-303': (_req, _body, res) => {
    res.writeHead(303, { location: '/method' });
    res.end();
  },
  '/method': (req, body, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`${req.method} ${body.length}`);
  },
  '/stream': (_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let sent = 0;
    const timer = setInterval(() => {
      res.write(`data: ${sent}\n\n`);
      if (++sent === 5) {
        clearInterval(timer);
        res.end();
      }
    }, 5);
  },
  '/cut': (_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\n');
    setTimeout(() => res.socket?.destroy(), 20);
  },
  '/gzip-cut': (_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
    const zipped = gzipSync('안녕하세요, '.repeat(2_000));
    res.write(zipped.subarray(0, 200));
    setTimeout(() => res.socket?.destroy(), 20);
  },
  '/moved-cut': (_req, _body, res) => {
    res.writeHead(307, { location: '/json', 'content-length': '1000' });
    res.write('part of a body never finished');
    setTimeout(() => res.socket?.destroy(), 20);
  },
  '/silent-body': (_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\n');
  },
  '/large': (_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.end(Buffer.alloc(4 * 1024 * 1024, 7));
  },
};

let server: Server;
let origin: string;
const httpFetch = createHttpFetch();

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (text: string) => {
      body += text;
    });
    req.on('end', () => {
      const route = routes[req.url ?? ''];
      if (route) return route(req, body, res);
      const hop = /^\/hop\/(\d+)$/.exec(req.url ?? '');
      if (hop) {
        res.writeHead(307, { location: `/hop/${Number(hop[1]) + 1}` });
        return res.end();
      }
      res.writeHead(404);
      res.end('no such route');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** What a caller can see of a response. */
async function seen(response: Response) {
  const headers = Object.fromEntries(
    [...response.headers].filter(([name]) => !['date', 'keep-alive', 'connection'].includes(name)),
  );
  return {
    status: response.status,
    statusText: response.statusText,
    ok: response.ok,
    headers,
    url: response.url,
    redirected: response.redirected,
    body: await response.text(),
  };
}

const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' };

describe('createHttpFetch', () => {
  it.each([
    ['/json', post],
    ['/json', { method: 'GET' }],
    ['/error', post],
    ['/empty', post],
    ['/gzip', { method: 'GET' }],
    ['/moved-307', post],
    ['/moved-303', post],
    ['/nowhere', post],
    ['/stream', post],
  ])('%s (%j) looks as it does through the built-in fetch', async (path, init) => {
    const ours = await seen(await httpFetch(`${origin}${path}`, init));
    const builtIn = await seen(await fetch(`${origin}${path}`, init));
    if (path === '/gzip') {
      expect(builtIn.headers['content-encoding']).toBe('gzip');
      delete builtIn.headers['content-encoding'];
      delete builtIn.headers['content-length'];
    }
    expect(ours).toEqual(builtIn);
  });

  it('sends the body and headers the caller gave, and follows a 307 with them', async () => {
    const response = await httpFetch(`${origin}/moved-307`, post);
    expect(response.url).toBe(`${origin}/json`);
    expect(await response.json()).toEqual({ echoed: '{"a":1}' });
  });

  it('drops the API key when a redirect leads to another origin, as fetch does', async () => {
    const seenHeaders: Record<string, string | undefined>[] = [];
    const elsewhere = createServer((req, res) => {
      seenHeaders.push({
        authorization: req.headers.authorization,
        other: req.headers['x-other'] as string | undefined,
      });
      res.end('elsewhere');
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    const to = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/`;
    const away = createServer((_req, res) => {
      res.writeHead(307, { location: to });
      res.end();
    });
    await new Promise<void>((resolve) => away.listen(0, '127.0.0.1', resolve));
    const from = `http://127.0.0.1:${(away.address() as AddressInfo).port}/`;
    try {
      const init = { ...post, headers: { authorization: 'Bearer sk-secret', 'x-other': 'kept' } };
      for (const fetcher of [httpFetch, fetch]) {
        expect(await (await fetcher(from, init)).text()).toBe('elsewhere');
      }
      // Ours, then the built-in fetch: the same on the other origin.
      expect(seenHeaders).toEqual([
        { authorization: undefined, other: 'kept' },
        { authorization: undefined, other: 'kept' },
      ]);
      // On the same origin the key goes along.
      const same = await httpFetch(`${origin}/moved-to-headers`, init);
      expect(await same.json()).toEqual({ authorization: 'Bearer sk-secret' });
    } finally {
      for (const server of [elsewhere, away]) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    }
  });

  it('gives up after 20 redirects, as fetch does', async () => {
    for (const fetcher of [httpFetch, fetch]) {
      const error = await fetcher(`${origin}/hop/0`, post).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as TypeError).message).toBe('fetch failed');
    }
  });

  it('turns a 303 after a POST into a GET without a body, as fetch does', async () => {
    const response = await httpFetch(`${origin}/moved-303`, post);
    expect(await response.text()).toBe('GET 0');
  });

  it('rejects a refused connection as fetch does: TypeError "fetch failed", cause ECONNREFUSED', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const ours = await httpFetch(`http://127.0.0.1:${port}/`, post).catch((e: unknown) => e);
    const builtIn = await fetch(`http://127.0.0.1:${port}/`, post).catch((e: unknown) => e);
    for (const error of [ours, builtIn]) {
      expect(error).toBeInstanceOf(TypeError);
      expect((error as TypeError).message).toBe('fetch failed');
      expect(((error as TypeError).cause as { code?: string }).code).toBe('ECONNREFUSED');
    }
  });

  it('errors a body cut before its end with TypeError "terminated", as fetch does', async () => {
    for (const fetcher of [httpFetch, fetch]) {
      const response = await fetcher(`${origin}/cut`, post);
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: 1\n\n');
      const error = await reader.read().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as TypeError).message).toBe('terminated');
    }
  });

  it('sends again on a new connection when a kept-alive one was closed by the server', async () => {
    // The server drops each connection at its second request without reading it, as one
    // whose idle timeout ends just as the request arrives does.
    const served = new WeakSet<object>();
    let dropped = 0;
    const dropping = createServer((req, res) => {
      if (served.has(req.socket)) {
        dropped++;
        req.socket.destroy();
        return;
      }
      served.add(req.socket);
      req.resume();
      req.on('end', () => res.end('fresh'));
    });
    await new Promise<void>((resolve) => dropping.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(dropping.address() as AddressInfo).port}/`;
    try {
      const fetcher = createHttpFetch();
      for (let i = 0; i < 3; i++) {
        expect(await (await fetcher(url, post)).text()).toBe('fresh');
      }
      // undici may open a second connection while the first is being released: at least one
      // request went out on a kept-alive connection, was dropped, and was sent again.
      expect(dropped).toBeGreaterThanOrEqual(1);
      // A fresh connection that fails is a failure, sent once, as fetch says it.
      let received = 0;
      const refused = createServer((req) => {
        received++;
        req.socket.destroy();
      });
      await new Promise<void>((resolve) => refused.listen(0, '127.0.0.1', resolve));
      const port = (refused.address() as AddressInfo).port;
      const error = await fetcher(`http://127.0.0.1:${port}/`, post).catch((e: unknown) => e);
      const fetchError = await fetch(`http://127.0.0.1:${port}/`, post).catch((e: unknown) => e);
      expect(received).toBe(2);
      for (const failed of [error, fetchError]) {
        expect((failed as TypeError).message).toBe('fetch failed');
        expect(((failed as TypeError).cause as { code?: string }).code).toBe('UND_ERR_SOCKET');
      }
      refused.close();
    } finally {
      dropping.closeAllConnections();
      await new Promise((resolve) => dropping.close(resolve));
    }
  });

  it('errors a compressed body cut short as "terminated" too, and fails a cut redirect', async () => {
    const response = await httpFetch(`${origin}/gzip-cut`);
    const error = await response.text().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe('terminated');
    // undici's redirect interceptor reads a redirect's own body to its end before it follows
    // it; cut short, the request fails as a lost connection does. (The built-in fetch follows
    // it or fails, depending on which it sees first: the head or the close.)
    const failed = await httpFetch(`${origin}/moved-cut`, post).catch((e: unknown) => e);
    expect((failed as TypeError).message).toBe('fetch failed');
    expect(((failed as TypeError).cause as { code?: string }).code).toBe('UND_ERR_SOCKET');
  });

  it('rejects with the signal’s reason when aborted before the answer or during the body', async () => {
    const reason = new DOMException('stop', 'TimeoutError');
    const early = new AbortController();
    early.abort(reason);
    await expect(httpFetch(`${origin}/json`, { ...post, signal: early.signal })).rejects.toBe(
      reason,
    );

    const late = new AbortController();
    const response = await httpFetch(`${origin}/silent-body`, { ...post, signal: late.signal });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    setTimeout(() => late.abort(reason), 10);
    await expect(reader.read()).rejects.toBe(reason);
  });

  it('delivers a large body whole to a slow reader (back-pressure pauses, then resumes)', async () => {
    const response = await httpFetch(`${origin}/large`);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let bytes = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      expect(value.every((byte) => byte === 7)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(bytes).toBe(4 * 1024 * 1024);
  });

  it('passes each network read through transformBody, and what is left at the end', async () => {
    const transformed = createHttpFetch({
      transformBody: (headers) =>
        headers.get('content-type') === 'text/event-stream'
          ? {
              chunk: (bytes) => Buffer.from(bytes.toString().toUpperCase().replaceAll('DATA', 'D')),
              end: () => Buffer.from('end\n'),
            }
          : undefined,
    });
    const text = await (await transformed(`${origin}/stream`, post)).text();
    expect(text).toBe('D: 0\n\nD: 1\n\nD: 2\n\nD: 3\n\nD: 4\n\nend\n');
    const untouched = await (await transformed(`${origin}/json`, post)).text();
    expect(untouched).toBe('{"echoed":"{\\"a\\":1}"}');
  });

  it('passes the body through transformBody where the built-in fetch sends it too', async () => {
    const transformed = createHttpFetch({
      transformBody: () => ({
        chunk: (bytes) => Buffer.from(bytes.toString().toUpperCase()),
        end: () => Buffer.from('|end'),
      }),
    });
    const form = new FormData();
    form.set('part', 'a form body');
    const asRequest = await transformed(new Request(`${origin}/method`, post));
    expect(await asRequest.text()).toBe('POST 7|end');
    const withForm = await transformed(`${origin}/method`, { method: 'POST', body: form });
    expect(withForm.status).toBe(200);
    expect(await withForm.text()).toMatch(/^POST \d+\|end$/);
  });

  it('stops reading an answer over its bound whichever fetch sends the request', async () => {
    const bounded = createBoundedFetch('test server', 1024 * 1024);
    const form = new FormData();
    form.set('part', 'a form body');
    for (const response of [
      await bounded(`${origin}/large`, { method: 'GET' }),
      await bounded(new Request(`${origin}/large`)),
      await bounded(`${origin}/large`, { method: 'POST', body: form }),
    ]) {
      await expect(response.arrayBuffer()).rejects.toBeInstanceOf(AnswerTooLargeError);
    }
  });
});

/**
 * The floor under Parley's per-token cost (bench/sse-floor.ts): the least a Node server can
 * do per streamed token. `write`: writes one SSE fragment per tick of its own timer, no
 * upstream. `passthrough` and `readable`: the same through a `PassThrough` or a plain
 * `Readable` piped into the response (what a framework that sends a stream body does).
 * `socket`: each fragment written straight to the socket, framed as an HTTP chunk by hand.
 * `relay`: reads the fake model's stream with the built-in fetch and writes one fragment per
 * token it finds, no SDK, no database; `relay-http` the same with Parley's model-server
 * client (src/models/http-fetch.ts: undici's dispatcher since issue 25, `node:http` before).
 * Prints its port on stdout.
 *
 *   node bench/support/sse-floor-child.ts write|socket|passthrough|readable|relay|relay-http [fakeUrl]
 */
import { createServer, type ServerResponse } from 'node:http';
import { PassThrough, Readable } from 'node:stream';
import { createHttpFetch } from '../../src/models/http-fetch.ts';

const httpFetch = createHttpFetch();

const [mode, fakeUrl] = process.argv.slice(2);

const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (text: string) => {
    body += text;
  });
  req.on('end', () => {
    const { tokens, delayMs } = JSON.parse(body) as { tokens: number; delayMs: number };
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (mode === 'relay') void relay(res, fetch);
    else if (mode === 'relay-http') void relay(res, httpFetch);
    else if (mode === 'passthrough') write(piped(res, new PassThrough()), tokens, delayMs);
    else if (mode === 'readable') write(piped(res, pushed()), tokens, delayMs);
    else if (mode === 'socket') write(framed(res), tokens, delayMs);
    else write(res, tokens, delayMs);
  });
});

/** Where `write` sends its fragments. */
interface Sink {
  write(text: string): unknown;
  end(text: string): unknown;
}

function piped(res: ServerResponse, body: Readable & Sink): Sink {
  body.pipe(res);
  return body;
}

/**
 * Writes each fragment straight to the socket, framed as an HTTP chunk by hand (one write
 * instead of the response's four), after the response has sent its head; `end` lets the
 * response write the last chunk.
 */
function framed(res: ServerResponse): Sink {
  res.flushHeaders();
  return {
    write: (text: string) =>
      res.socket?.write(`${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`),
    end: (text: string) => res.end(text),
  };
}

/** A plain Readable fed with push(): no writable side, unlike a PassThrough. */
function pushed(): Readable & Sink {
  const body = new Readable({ read() {} }) as Readable & Sink;
  body.write = (text: string) => body.push(text);
  body.end = (text: string) => {
    body.push(text);
    body.push(null);
    return body;
  };
  return body;
}

function write(res: Sink, tokens: number, delayMs: number) {
  let sent = 0;
  const timer = setInterval(() => {
    res.write(`data: ${JSON.stringify(` t${++sent}`)}\n\n`);
    if (sent === tokens) {
      clearInterval(timer);
      res.end('data: [DONE]\n\n');
    }
  }, delayMs);
}

async function relay(res: ServerResponse, fetch: typeof globalThis.fetch) {
  const upstream = await fetch(`${fakeUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const decoder = new TextDecoder();
  let pending = '';
  if (!upstream.ok) throw new Error(`upstream ${upstream.status}`);
  for await (const bytes of upstream.body as AsyncIterable<Uint8Array>) {
    pending += decoder.decode(bytes, { stream: true });
    let end = pending.indexOf('\n\n');
    let out = '';
    while (end !== -1) {
      const event = pending.slice(0, end);
      pending = pending.slice(end + 2);
      end = pending.indexOf('\n\n');
      if (!event.startsWith('data: {')) continue;
      const chunk = JSON.parse(event.slice(6)) as { choices?: { delta?: { content?: string } }[] };
      const text = chunk.choices?.[0]?.delta?.content;
      if (text) out += `data: ${JSON.stringify(text)}\n\n`;
    }
    if (out) res.write(out);
  }
  res.end('data: [DONE]\n\n');
}

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address && typeof address === 'object') console.log(address.port);
});

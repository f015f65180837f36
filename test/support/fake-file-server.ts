import type { IncomingMessage, ServerResponse } from 'node:http';
import { HTML_502 } from './body-endings.ts';
import { listen } from './fake-http.ts';

// Serves one file over HTTP the way a model host does: HEAD, GET, and byte
// ranges. It can misbehave on purpose: drop the connection in the middle of
// the first ranged GET, or stall there, so download resume is tested against
// a real socket instead of a mocked downloader.

export type FileRequest = { method: string; range: string | undefined };

export type FakeFileServer = {
  url: string;
  requests: FileRequest[];
  crashes: unknown[];
  close(): Promise<void>;
};

export type FakeFileOptions = {
  path?: string;
  /** The first ranged GET sends bytes up to this file offset, then `fault` happens. */
  faultAt?: number;
  fault?: 'drop' | 'stall';
  /** Every ranged GET that reaches `faultAt` faults, not only the first: never completes. */
  faultEvery?: boolean;
  /**
   * `short`: the file is served as if it ended `shortBy` bytes early, its length said
   * consistently (HEAD, content-length, content-range), as a mirror holding a cut copy does;
   * `html-502`: every GET is answered by a proxy's HTML 502 page (HEAD still 200).
   */
  ending?: 'short' | 'html-502';
  shortBy?: number;
};

function parseRange(header: string | undefined, size: number): [number, number] | undefined {
  const match = header?.match(/^bytes=(\d*)-(\d*)$/);
  if (!match) return undefined;
  const start = match[1] ? Number(match[1]) : 0;
  const end = match[2] ? Math.min(Number(match[2]), size - 1) : size - 1;
  return [start, end];
}

export async function serveFile(
  bytes: Uint8Array,
  options: FakeFileOptions = {},
): Promise<FakeFileServer> {
  const path = options.path ?? '/models/tiny.gguf';
  const requests: FileRequest[] = [];
  const crashes: unknown[] = [];
  const whole = bytes;
  if (options.ending === 'short') bytes = whole.subarray(0, whole.length - (options.shortBy ?? 1));
  let faulted = false;

  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const range = req.headers.range;
    requests.push({ method: req.method ?? 'GET', range });
    if (new URL(req.url ?? '/', 'http://fake').pathname !== path) {
      res.writeHead(404).end();
      return;
    }
    const headers = { 'accept-ranges': 'bytes', 'content-type': 'application/octet-stream' };
    if (req.method === 'HEAD') {
      res.writeHead(200, { ...headers, 'content-length': bytes.length }).end();
      return;
    }
    if (options.ending === 'html-502') {
      res.writeHead(502, { 'content-type': 'text/html', 'content-length': HTML_502.length });
      res.end(HTML_502);
      return;
    }
    const parsed = parseRange(range, bytes.length);
    const [start, end] = parsed ?? [0, bytes.length - 1];
    res.writeHead(parsed ? 206 : 200, {
      ...headers,
      'content-length': end - start + 1,
      ...(parsed ? { 'content-range': `bytes ${start}-${end}/${bytes.length}` } : {}),
    });
    if (
      parsed &&
      options.faultAt !== undefined &&
      options.faultAt > start &&
      (options.faultEvery ? options.faultAt <= end : !faulted)
    ) {
      faulted = true;
      res.write(bytes.subarray(start, options.faultAt));
      if (options.fault === 'stall') return; // headers and part of the body, then silence
      await new Promise((resolve) => setTimeout(resolve, 20));
      res.destroy(); // the connection drops mid-body
      return;
    }
    res.end(bytes.subarray(start, end + 1));
  };

  const server = await listen(handler, (_req, error) => crashes.push(error));
  let closing: Promise<void> | undefined;
  return {
    url: `${server.origin}${path}`,
    requests,
    crashes,
    close: () => {
      closing ??= server.close();
      return closing;
    },
  };
}

import { gunzipSync, zstdDecompressSync } from 'node:zlib';

export interface MultipartPart {
  name: string;
  contentType: string;
  data: Buffer;
  /** Parsed when the part is JSON. */
  json: unknown;
}

/**
 * Undoes `Content-Encoding`. The langsmith client compresses run batches with zstd or
 * gzip when `/info` allows it, so the fake must read both.
 */
export function decodeBody(raw: Buffer, encoding: string | undefined): Buffer {
  if (encoding === 'gzip') return gunzipSync(raw);
  if (encoding === 'zstd') return zstdDecompressSync(raw);
  return raw;
}

/** Splits a `multipart/form-data` body; undefined when it is not one. */
export function parseMultipart(
  body: Buffer,
  contentType: string | undefined,
): MultipartPart[] | undefined {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType ?? '');
  const marker = boundary?.[1] ?? boundary?.[2];
  if (!contentType?.startsWith('multipart/form-data') || marker === undefined) return undefined;
  const delimiter = Buffer.from(`--${marker}`);
  const parts: MultipartPart[] = [];
  let start = body.indexOf(delimiter);
  if (start < 0) return undefined;
  for (;;) {
    const afterDelimiter = start + delimiter.length;
    // `--boundary--` closes the body.
    if (body.subarray(afterDelimiter, afterDelimiter + 2).toString() === '--') return parts;
    const next = body.indexOf(delimiter, afterDelimiter);
    if (next < 0) return undefined;
    // Each part sits between the CRLF after the delimiter and the CRLF before the next one.
    const part = parsePart(body.subarray(afterDelimiter + 2, next - 2));
    if (part === undefined) return undefined;
    parts.push(part);
    start = next;
  }
}

function parsePart(raw: Buffer): MultipartPart | undefined {
  const headerEnd = raw.indexOf('\r\n\r\n');
  if (headerEnd < 0) return undefined;
  const headers = raw.subarray(0, headerEnd).toString('utf8');
  const name = /content-disposition:[^\r\n]*\bname="([^"]*)"/i.exec(headers)?.[1];
  if (name === undefined) return undefined;
  const contentType = /content-type:\s*([^\r\n]*)/i.exec(headers)?.[1] ?? 'text/plain';
  const data = raw.subarray(headerEnd + 4);
  let json: unknown;
  if (contentType.startsWith('application/json')) {
    try {
      json = JSON.parse(data.toString('utf8'));
    } catch {
      return undefined;
    }
  }
  return { name, contentType, data, json };
}

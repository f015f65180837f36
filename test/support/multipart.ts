import { randomBytes } from 'node:crypto';

export type Part =
  | { name: string; value: string }
  | { name: string; filename: string; data: Uint8Array | string; type?: string };

/**
 * A multipart/form-data body written byte by byte, so tests can send what browsers would not
 * (path-like or control-character file names, 4 KB names) exactly as a hostile client would.
 */
export function multipartBody(parts: Part[]): { body: Buffer; contentType: string } {
  const boundary = `----parley${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`;
    if ('filename' in part) {
      head += `; filename="${part.filename}"\r\nContent-Type: ${part.type ?? 'application/octet-stream'}`;
    }
    chunks.push(Buffer.from(`${head}\r\n\r\n`, 'utf8'));
    const data = 'filename' in part ? part.data : part.value;
    chunks.push(typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

/** POSTs a file to /ingest as multipart; resolves with the status, the answer and the time. */
export async function timedIngest(
  baseUrl: string,
  path: string,
  source = basename(path),
): Promise<{ status: number; ms: number; body: unknown }> {
  const form = new FormData();
  form.set('file', new Blob([readFileSync(path)]), basename(path));
  form.set('source', source);
  const startedAt = performance.now();
  const response = await fetch(`${baseUrl}/ingest`, { method: 'POST', body: form });
  const body = (await response.json()) as unknown;
  return { status: response.status, ms: performance.now() - startedAt, body };
}

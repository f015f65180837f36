import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { multipartBody, type Part } from './multipart.ts';
import type { RunningParley } from './start-parley.ts';

export const PDFS = '../shared/data/pdfs';

export interface IngestAnswer {
  status: number;
  body: { chunks?: number; filename?: string; source?: string; detail?: unknown };
}

/** Posts a multipart upload to /ingest, the way a client would. */
export async function ingest(parley: RunningParley, parts: Part[]): Promise<IngestAnswer> {
  const { body, contentType } = multipartBody(parts);
  const response = await parley.fetch('/ingest', {
    method: 'POST',
    headers: { 'content-type': contentType },
    body,
  });
  return { status: response.status, body: (await response.json()) as IngestAnswer['body'] };
}

export const file = (filename: string, data: Uint8Array | string): Part => ({
  name: 'file',
  filename,
  data,
});

/** Every file left in Parley's uploads folder (it should be none between requests). */
export function leftoverUploads(parley: RunningParley): string[] {
  return readdirSync(join(parley.dataDir, 'uploads'));
}

export async function listedSources(parley: RunningParley): Promise<string[]> {
  const response = await parley.fetch('/documents');
  return ((await response.json()) as { documents: string[] }).documents;
}

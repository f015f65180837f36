import { readFile } from 'node:fs/promises';

/** ipull's progress record, kept as JSON right after the data in `<file>.ipull`. */
export interface SavedProgress {
  /** Status per chunk: 0 not started, 1 in progress, 2 complete. */
  chunks: number[];
  chunkSize: number;
}

/**
 * Waits until the partial download at `path` (a file of `dataSize` bytes once complete)
 * records at least one complete chunk, and returns the indexes of the complete ones. A test
 * interrupts the download only then, so that there is something to resume.
 */
export async function waitForSavedChunks(
  path: string,
  dataSize: number,
  timeoutMs = 10_000,
): Promise<{ done: number[]; chunkSize: number }> {
  for (let waited = 0; waited < timeoutMs; waited += 10) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    const bytes = await readFile(path).catch(() => undefined);
    let saved: SavedProgress | undefined;
    try {
      saved = bytes && (JSON.parse(bytes.subarray(dataSize).toString()) as SavedProgress);
    } catch {} // not written yet, or being written
    const done = (saved?.chunks ?? []).flatMap((status, i) => (status === 2 ? [i] : []));
    if (saved && done.length > 0) return { done, chunkSize: saved.chunkSize };
  }
  throw new Error(`no chunk of ${path} was recorded as complete within ${timeoutMs} ms`);
}

/** Byte ranges (inclusive) of the ranged GETs in a fake file server's request log. */
export function rangesFetched(requests: readonly { range?: string | undefined }[]) {
  return requests.flatMap((r) => {
    const match = r.range?.match(/^bytes=(\d+)-(\d+)$/);
    return match ? [[Number(match[1]), Number(match[2])] as const] : [];
  });
}

/** True when none of the ranges touches one of the chunks. */
export const noneOverlaps = (
  ranges: readonly (readonly [number, number])[],
  chunks: readonly number[],
  chunkSize: number,
) =>
  chunks.every((chunk) =>
    ranges.every(([from, to]) => to < chunk * chunkSize || from >= (chunk + 1) * chunkSize),
  );

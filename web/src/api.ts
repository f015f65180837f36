/** Parley's public API as the page uses it: same origin, the session cookie, JSON. */

/** Sent with every request: the server refuses a cookie-signed change without it (CSRF). */
const CLIENT_HEADER = { 'x-parley-client': 'web' };

export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** Told when the server answers 401: the session is gone, the page shows the sign-in form. */
export const signedOut = new EventTarget();

export async function detailOf(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { detail?: unknown };
    const detail = body.detail;
    if (typeof detail === 'string') return detail;
    if (Array.isArray(detail)) {
      return detail
        .map(
          (item: { loc?: unknown[]; msg?: string }) =>
            `${item.loc?.slice(1).join('.')}: ${item.msg}`,
        )
        .join('; ');
    }
  } catch {
    // not JSON
  }
  return `HTTP ${response.status}`;
}

export async function api<T>(
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
): Promise<T> {
  const headers: Record<string, string> = { ...CLIENT_HEADER };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method: init.method ?? 'GET',
    headers,
    credentials: 'same-origin',
    body: init.body === undefined ? null : JSON.stringify(init.body),
    signal: init.signal ?? null,
  });
  if (response.status === 401 && !path.startsWith('/session')) {
    signedOut.dispatchEvent(new Event('signed-out'));
  }
  if (!response.ok) throw new ApiError(response.status, await detailOf(response));
  return (await response.json()) as T;
}

export const enc = encodeURIComponent;

export type StreamEvent =
  | { type: 'start'; runId: string }
  /** The SSE id of the events that follow (a resumable answer): where to resume from. */
  | { type: 'id'; id: number }
  | { type: 'text'; text: string }
  | { type: 'error'; code: string; message: string }
  /** `stopped`: a resumable answer stopped by Stop (here or in another tab). */
  | { type: 'done'; runId: string; stopped: boolean }
  | { type: 'approval'; approval: ToolApproval }
  | { type: 'approval-decided'; id: string; decision: ApprovalDecision };

/** A tool call of an MCP server waiting for the user's decision. */
export interface ToolApproval {
  id: string;
  server: string;
  tool: string;
  arguments: unknown;
}
export type ApprovalDecision = 'approve' | 'deny' | 'always' | 'expired';

/** POST /chat and the events of its stream, as they arrive (spec §6). */
export async function* chatStream(
  body: Record<string, unknown>,
  signal: AbortSignal,
): AsyncGenerator<StreamEvent> {
  const response = await fetch('/chat', {
    method: 'POST',
    headers: { ...CLIENT_HEADER, 'content-type': 'application/json' },
    credentials: 'same-origin',
    body: JSON.stringify(body),
    signal,
  });
  yield* streamEvents(response);
}

/**
 * A resumable answer followed again (after a reload, in another tab): its events after
 * `after`, then the live rest. A run that is gone (ended long ago) is an ApiError 404.
 */
export async function* followRun(
  user: string,
  runId: string,
  after: number,
  signal: AbortSignal,
): AsyncGenerator<StreamEvent> {
  const response = await fetch(`/users/${enc(user)}/runs/${enc(runId)}/events`, {
    headers: { ...CLIENT_HEADER, 'last-event-id': String(after) },
    credentials: 'same-origin',
    signal,
  });
  yield* streamEvents(response);
}

/** Stops a resumable answer wherever it is written; its streams then end. */
export const stopRun = (user: string, runId: string) =>
  api<{ status: string }>(`/users/${enc(user)}/runs/${enc(runId)}/stop`, { method: 'POST' });

async function* streamEvents(response: Response): AsyncGenerator<StreamEvent> {
  if (response.status === 401) signedOut.dispatchEvent(new Event('signed-out'));
  if (!response.ok || !response.body) {
    throw new ApiError(response.status, await detailOf(response));
  }
  // The run's id comes first, in a header: an answer stopped before its end event can still be rated.
  const runId = response.headers.get('x-parley-run-id');
  if (runId) yield { type: 'start', runId };
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      for (const line of event.split('\n')) {
        if (line.startsWith('id: ')) yield { type: 'id', id: Number(line.slice(4)) };
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') return;
        const parsed = JSON.parse(data) as
          | string
          | {
              __done?: boolean;
              run_id?: string;
              stopped?: boolean;
              __error?: { code: string; message: string };
              __approval?: ToolApproval;
              __approval_decided?: { id: string; decision: ApprovalDecision };
            };
        if (typeof parsed === 'string') yield { type: 'text', text: parsed };
        else if (parsed.__approval) yield { type: 'approval', approval: parsed.__approval };
        else if (parsed.__approval_decided)
          yield { type: 'approval-decided', ...parsed.__approval_decided };
        else if (parsed.__error) yield { type: 'error', ...parsed.__error };
        else if (parsed.__done && parsed.run_id) {
          yield { type: 'done', runId: parsed.run_id, stopped: parsed.stopped === true };
        }
      }
    }
  }
}

/** Uploads one file to /ingest, telling how much is sent; resolves with the server's answer. */
export function upload(
  file: File,
  fields: Record<string, string>,
  onProgress: (fraction: number) => void,
  onSent: () => void,
): Promise<{ chunks: number; source: string }> {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    form.append('file', file);
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/ingest');
    xhr.setRequestHeader('x-parley-client', 'web');
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    };
    xhr.upload.onload = () => onSent();
    xhr.onerror = () => reject(new ApiError(0, 'network'));
    xhr.onload = () => {
      if (xhr.status === 200) return resolve(JSON.parse(xhr.responseText));
      let detail = `HTTP ${xhr.status}`;
      try {
        const body = JSON.parse(xhr.responseText) as { detail?: unknown };
        if (typeof body.detail === 'string') detail = body.detail;
      } catch {
        // not JSON
      }
      if (xhr.status === 401) signedOut.dispatchEvent(new Event('signed-out'));
      reject(new ApiError(xhr.status, detail));
    };
    xhr.send(form);
  });
}

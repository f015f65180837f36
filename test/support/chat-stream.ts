/**
 * Reads a `/chat` response the way the spec's client does (§6.5): only `data: ` lines count,
 * `[DONE]` ends the stream. Also keeps the raw text for byte-exact assertions.
 */
export interface ChatStream {
  raw: string;
  /** Answer fragments, in order (JSON strings decoded). */
  fragments: string[];
  text: string;
  runId: string | undefined;
  error: { code: string; message: string } | undefined;
  /** Whether the literal `[DONE]` event arrived. */
  ended: boolean;
}

export function parseChatStream(raw: string): ChatStream {
  const stream: ChatStream = {
    raw,
    fragments: [],
    text: '',
    runId: undefined,
    error: undefined,
    ended: false,
  };
  for (const event of raw.split('\n\n')) {
    if (!event.startsWith('data: ')) continue;
    const data = event.slice('data: '.length);
    if (data === '[DONE]') {
      stream.ended = true;
      continue;
    }
    const value = JSON.parse(data) as unknown;
    if (typeof value === 'string') {
      stream.fragments.push(value);
    } else if (value && typeof value === 'object' && '__done' in value) {
      stream.runId = (value as unknown as { run_id: string }).run_id;
    } else if (value && typeof value === 'object' && '__error' in value) {
      stream.error = (value as { __error: ChatStream['error'] }).__error;
    } else {
      throw new Error(`unexpected event ${data}`);
    }
  }
  stream.text = stream.fragments.join('');
  return stream;
}

export async function readChat(response: Response): Promise<ChatStream> {
  return parseChatStream(await response.text());
}

/**
 * Reads a streaming response step by step: `until` returns the text so far once `predicate`
 * holds; `rest` reads to the end (or to the connection's end, if the server cuts it).
 */
export function streamReader(response: Response) {
  const reader = response.body?.getReader();
  if (!reader) throw new Error('no body');
  const decoder = new TextDecoder();
  let raw = '';
  return {
    async until(predicate: (raw: string) => boolean): Promise<string> {
      while (!predicate(raw)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before the condition held:\n${raw}`);
        raw += decoder.decode(value, { stream: true });
      }
      return raw;
    },
    /** Lets the rest go unread, as a client that leaves (the connection is closed). */
    cancel: () => reader.cancel(),
    async rest(): Promise<string> {
      try {
        while (true) {
          const { value, done } = await reader.read();
          if (done) break;
          raw += decoder.decode(value, { stream: true });
        }
      } catch {
        // the server cut the connection: return what arrived
      }
      return raw;
    },
  };
}

/** A tool call waiting for the user's decision, as an `__approval` event asks it. */
export interface ApprovalQuestion {
  id: string;
  server: string;
  tool: string;
  arguments: unknown;
}

/**
 * The first `__approval` question among the whole events of a stream's text so far (one still
 * arriving is not read), from its `data:` line: a resumable stream's events carry an `id:` too.
 */
export function approvalIn(raw: string): ApprovalQuestion | undefined {
  for (const event of raw.split('\n\n').slice(0, -1)) {
    const data = event.split('\n').find((line) => line.startsWith('data: '));
    if (!data?.includes('"__approval"')) continue;
    return (JSON.parse(data.slice('data: '.length)) as { __approval: ApprovalQuestion }).__approval;
  }
  return undefined;
}

/** Reads until `predicate` holds for the text so far (the rest of the body is left unread). */
export async function readUntil(
  response: Response,
  predicate: (raw: string) => boolean,
): Promise<string> {
  return streamReader(response).until(predicate);
}

/**
 * Paces a fake model by its client: the fake writes its next chunk only once the client has
 * shown all the text written so far. Pass `pace` to the reply and report what the client
 * shows with `shown`; a test then sees exactly one fragment per chunk, on any machine.
 */
export function lockstep() {
  let shown = '';
  const waiters: { text: string; resolve: () => void }[] = [];
  const release = () => {
    for (const waiter of [...waiters]) {
      if (!shown.startsWith(waiter.text)) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  return {
    pace(textWritten: string): Promise<void> {
      return new Promise((resolve) => {
        waiters.push({ text: textWritten, resolve });
        release();
      });
    },
    shown(text: string): void {
      shown = text;
      release();
    },
  };
}

/** Reads a `/chat` stream to its end, telling `pacer` what it has shown after every read. */
export async function readChatInLockstep(
  response: Response,
  pacer: ReturnType<typeof lockstep>,
): Promise<ChatStream> {
  const reader = streamReader(response);
  await reader.until((soFar) => {
    pacer.shown(parseChatStream(soFar.slice(0, soFar.lastIndexOf('\n\n') + 2)).text);
    return soFar.includes('data: [DONE]\n\n');
  });
  return parseChatStream(await reader.rest());
}

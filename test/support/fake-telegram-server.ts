import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  assertNone,
  listen,
  type RecordedRequest,
  readRequest,
  sendJson,
  type UnexpectedRequest,
} from './fake-http.ts';

/** A message the fake Bot API accepted. */
export interface SentMessage {
  chatId: string;
  text: string;
  messageId: number;
}

/** A scripted answer to the next sendMessage, in the Bot API's own error shapes. */
export type SendFault =
  | { kind: 'error'; status: number; description: string; retryAfter?: number }
  /** Reads the request, then never answers (a send cut short by a crash). */
  | { kind: 'hang' };

export interface FakeTelegramServer {
  /** For TELEGRAM_API_BASE. */
  url: string;
  token: string;
  /** Every sendMessage request, answered or not. */
  sendRequests: RecordedRequest[];
  /** sendMessage requests the fake accepted (`ok: true`). */
  sent: SentMessage[];
  unexpected: UnexpectedRequest[];
  /** getUpdates requests that arrived while another was still waiting (Telegram: 409). */
  conflicts: number;
  /** The next sendMessage calls get these answers, one each. */
  failNext(...faults: SendFault[]): void;
  /** While down, every sendMessage gets a 502 from the proxy in front (HTML, not JSON). */
  down: boolean;
  /** Chats that blocked the bot: 403. */
  blocked: Set<string>;
  /** Queues a user's message for getUpdates. */
  pushMessage(chatId: number, text: string, languageCode?: string): void;
  sentTo(chatId: string): SentMessage[];
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  assertNoUnexpected(): void;
  close(): Promise<void>;
}

/**
 * A fake Telegram Bot API: `POST /bot<token>/sendMessage` and `/getUpdates` with the real JSON
 * (`ok`, `result`, `error_code`, `description`, `parameters.retry_after`). Anything else, or a
 * wrong token, is answered as Telegram would and recorded as unexpected.
 */
export async function startFakeTelegramServer(
  token = '123456:TEST-token',
): Promise<FakeTelegramServer> {
  const sendRequests: RecordedRequest[] = [];
  const sent: SentMessage[] = [];
  const unexpected: UnexpectedRequest[] = [];
  const faults: SendFault[] = [];
  const updates: { update_id: number; message: unknown }[] = [];
  const hung: ServerResponse[] = [];
  let nextUpdateId = 1000;
  let nextMessageId = 1;
  let polling = 0;
  let wakePoller: (() => void) | undefined;

  const fake: FakeTelegramServer = {
    url: '',
    token,
    sendRequests,
    sent,
    unexpected,
    conflicts: 0,
    down: false,
    blocked: new Set(),
    failNext: (...more) => faults.push(...more),
    pushMessage(chatId, text, languageCode = 'en') {
      updates.push({
        update_id: nextUpdateId++,
        message: {
          message_id: nextUpdateId,
          date: Math.floor(Date.now() / 1000),
          chat: { id: chatId, type: 'private' },
          from: { id: chatId, is_bot: false, first_name: 'Test', language_code: languageCode },
          text,
        },
      });
      wakePoller?.();
    },
    sentTo: (chatId) => sent.filter((m) => m.chatId === chatId),
    async waitFor(predicate, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        if (Date.now() > deadline) throw new Error('fake Telegram: condition not met in time');
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    assertNoUnexpected: () => assertNone('fake Telegram', unexpected),
    close: async () => {
      for (const res of hung) res.destroy();
      wakePoller?.();
      await server.close();
    },
  };

  const fail = (res: ServerResponse, status: number, description: string, retryAfter?: number) =>
    sendJson(res, status, {
      ok: false,
      error_code: status,
      description,
      ...(retryAfter ? { parameters: { retry_after: retryAfter } } : {}),
    });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = await readRequest(req);
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(request.path);
    if (!match || request.method !== 'POST') {
      unexpected.push({ method: request.method, path: request.path, reason: 'no such route' });
      return fail(res, 404, 'Not Found');
    }
    if (match[1] !== token) {
      unexpected.push({ method: request.method, path: '/bot<wrong>/…', reason: 'wrong token' });
      return fail(res, 401, 'Unauthorized');
    }
    if (match[2] === 'sendMessage') return sendMessage(request, res);
    if (match[2] === 'getUpdates') return getUpdates(request, res);
    unexpected.push({ method: request.method, path: `/bot…/${match[2]}`, reason: 'unused method' });
    return fail(res, 404, 'Not Found: method not found');
  }

  function sendMessage(request: RecordedRequest, res: ServerResponse) {
    sendRequests.push(request);
    const body = request.body as { chat_id?: unknown; text?: unknown } | undefined;
    const chatId = body?.chat_id;
    if (
      (typeof chatId !== 'string' && typeof chatId !== 'number') ||
      typeof body?.text !== 'string'
    ) {
      unexpected.push({ method: 'POST', path: '/sendMessage', reason: 'no chat_id or text' });
      return fail(res, 400, 'Bad Request: message text is empty');
    }
    if (fake.down) {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body><h1>502 Bad Gateway</h1></body></html>');
      return;
    }
    const fault = faults.shift();
    if (fault?.kind === 'hang') {
      hung.push(res);
      return;
    }
    if (fault) return fail(res, fault.status, fault.description, fault.retryAfter);
    if (fake.blocked.has(String(chatId)))
      return fail(res, 403, 'Forbidden: bot was blocked by the user');
    const messageId = nextMessageId++;
    sent.push({ chatId: String(chatId), text: body.text, messageId });
    sendJson(res, 200, {
      ok: true,
      result: {
        message_id: messageId,
        date: 0,
        chat: { id: Number(chatId), type: 'private' },
        text: body.text,
      },
    });
  }

  async function getUpdates(request: RecordedRequest, res: ServerResponse): Promise<void> {
    const body = (request.body ?? {}) as { offset?: number; timeout?: number };
    if (polling > 0) {
      fake.conflicts++;
      unexpected.push({ method: 'POST', path: '/getUpdates', reason: 'two pollers at once' });
      return fail(
        res,
        409,
        'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
      );
    }
    polling++;
    try {
      const offset = body.offset ?? 0;
      const pending = () => updates.filter((u) => u.update_id >= offset);
      if (pending().length === 0 && (body.timeout ?? 0) > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, (body.timeout ?? 0) * 1000);
          wakePoller = () => {
            clearTimeout(timer);
            resolve();
          };
          res.once('close', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        wakePoller = undefined;
      }
      if (!res.destroyed) sendJson(res, 200, { ok: true, result: pending() });
    } finally {
      polling--;
    }
  }

  const server = await listen(handle, (req, error) =>
    unexpected.push({
      method: req.method ?? '?',
      path: req.url ?? '?',
      reason: `fake crashed: ${error}`,
    }),
  );
  fake.url = server.origin;
  return fake;
}

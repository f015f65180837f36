import type { IncomingMessage, ServerResponse } from 'node:http';
import { type BodyEnding, endBody } from './body-endings.ts';
import {
  assertNone,
  listen,
  type RecordedRequest,
  readRequest,
  sendJson,
  type UnexpectedRequest,
} from './fake-http.ts';
import { parseTelegramHtml } from './fake-telegram/parse-html.ts';

/** A message the fake Bot API accepted (sendMessage), as it stands after any edits. */
export interface SentMessage {
  chatId: string;
  /** The `text` of the request (HTML source when `parseMode` is HTML). */
  text: string;
  messageId: number;
  parseMode?: string | undefined;
  /** What the user sees: the text with its HTML parsed. */
  visible: string;
  replyMarkup?: unknown;
  /** Visible texts of later edits, oldest first. */
  edits: string[];
}

export interface DraftShown {
  chatId: string;
  draftId: number;
  visible: string;
  at: number;
}

/** One Bot API call, as received (answered or not). */
export interface BotCall {
  method: string;
  body: Record<string, unknown>;
  at: number;
  /** The HTTP status the fake answered with. */
  status?: number;
}

/** A scripted answer to a call, in the Bot API's own error shapes. */
export type SendFault =
  | { kind: 'error'; status: number; description: string; retryAfter?: number }
  /** Reads the request, then never answers (a send cut short by a crash). */
  | { kind: 'hang' }
  /**
   * Answers 200 with the call's own answer (for getUpdates: the updates due) and ends it this
   * way (test/support/body-endings.ts): the call is carried out, its answer does not arrive whole.
   */
  | { kind: 'ending'; ending: BodyEnding };

export interface FakeTelegramServer {
  /** For TELEGRAM_API_BASE. */
  url: string;
  token: string;
  /** Every sendMessage request, answered or not. */
  sendRequests: RecordedRequest[];
  /** sendMessage requests the fake accepted (`ok: true`). */
  sent: SentMessage[];
  /** Every call to any method, in arrival order. */
  calls: BotCall[];
  drafts: DraftShown[];
  /** answerCallbackQuery calls Telegram accepted. */
  callbackAnswers: { id: string; text?: string }[];
  /**
   * answerCallbackQuery calls Telegram refused with 400 {@link QUERY_TOO_OLD}: an id never
   * delivered, one answered already, or one answered after {@link callbackWindowMs}. Each is
   * also recorded as unexpected, so `assertNoUnexpected` fails on it.
   */
  refusedCallbackAnswers: RefusedCallbackAnswer[];
  /**
   * How long after a press is delivered Telegram still takes its answer (about 15 s on the
   * real Bot API; not documented, observed).
   */
  callbackWindowMs: number;
  /** setMyCommands, by language_code ('' for the default). */
  commands: Map<string, { command: string; description: string }[]>;
  webhook: { url: string; secret: string | undefined } | undefined;
  unexpected: UnexpectedRequest[];
  /** getUpdates requests that arrived while another was still waiting (Telegram: 409). */
  conflicts: number;
  /** The next sendMessage calls get these answers, one each. */
  failNext(...faults: SendFault[]): void;
  /**
   * The next calls of `method` get these answers, one each. `getUpdates` takes endings, and
   * `download` (the file path, not a Bot API method) takes errors and endings.
   */
  failMethod(method: string, ...faults: SendFault[]): void;
  /** The next `count` calls of any sending method get 429 with `retry_after`. */
  rateLimit(count: number, retryAfterSeconds: number): void;
  /**
   * sendMessageDraft answers 400 TEXTDRAFT_PEER_INVALID, as Telegram does for a bot or chat
   * where drafts are not available.
   */
  draftsRefused: boolean;
  /** While down, every sendMessage gets a 502 from the proxy in front (HTML, not JSON). */
  down: boolean;
  /** Chats that blocked the bot: 403. */
  blocked: Set<string>;
  /** Queues a user's message for getUpdates (or the webhook); returns its update_id. */
  pushMessage(chatId: number, text: string, languageCode?: string): number;
  /** Queues any message (photo, document, sticker, a group's…); returns its update_id. */
  pushUpdateMessage(chatId: number, fields: Record<string, unknown>, options?: PushOptions): number;
  /**
   * Queues an update as given (after its update_id): kinds and shapes the other helpers do not
   * make, down to ones Telegram never sends; returns its update_id.
   */
  pushUpdate(fields: Record<string, unknown>): number;
  /** Queues the user's edit of a message they sent earlier (`edited_message`); returns its update_id. */
  pushEditedMessage(chatId: number, text: string, languageCode?: string): number;
  /** Queues a button press under message `messageId`; returns the callback query's id. */
  pushCallback(chatId: number, messageId: number, data: string, languageCode?: string): string;
  /**
   * A file the bot can fetch with getFile; returns its file_id. `sizeKnown: false`: getFile's
   * answer leaves `file_size` out, as the Bot API may.
   */
  addFile(
    bytes: Buffer,
    extension: string,
    options?: { sizeKnown?: boolean },
  ): { fileId: string; size: number };
  /** Makes the next getUpdates answer again everything since `fromUpdateId` (a re-delivery). */
  redeliverFrom(fromUpdateId: number): void;
  /** Posts an update again to the webhook set with setWebhook (pushing posts it once). */
  deliver(updateId: number, options?: { secret?: string | null }): Promise<number>;
  sentTo(chatId: string): SentMessage[];
  /** What the user sees in a chat: each message's text as last edited, in order. */
  visibleIn(chatId: string): string[];
  callsOf(method: string): BotCall[];
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  assertNoUnexpected(): void;
  close(): Promise<void>;
}

export interface RefusedCallbackAnswer {
  id: string;
  reason: 'unknown id' | 'answered twice' | 'too old';
  at: number;
}

/** The real Bot API's description for all three refusals of answerCallbackQuery. */
export const QUERY_TOO_OLD =
  'Bad Request: query is too old and response timeout expired or query ID is invalid';

export interface PushOptions {
  languageCode?: string;
  chatType?: 'private' | 'group' | 'supergroup' | 'channel';
}

const SENDING = new Set([
  'sendMessage',
  'sendMessageDraft',
  'editMessageText',
  'editMessageReplyMarkup',
  'sendChatAction',
  'answerCallbackQuery',
]);

/**
 * A fake Telegram Bot API speaking the real JSON (`ok`, `result`, `error_code`,
 * `description`, `parameters.retry_after`): getUpdates, setWebhook, deleteWebhook,
 * sendMessage, sendMessageDraft, editMessageText, editMessageReplyMarkup, sendChatAction, getFile and the file
 * download path, answerCallbackQuery, setMyCommands. HTML (`parse_mode: HTML`) is checked as
 * Telegram does, and a text's limits enforced: 4,096 characters shown, 32 KiB as sent.
 * Anything else, or a wrong token, is answered as Telegram would and recorded as unexpected.
 */
export async function startFakeTelegramServer(
  token = '123456:TEST-token',
): Promise<FakeTelegramServer> {
  const sendRequests: RecordedRequest[] = [];
  const sent: SentMessage[] = [];
  const unexpected: UnexpectedRequest[] = [];
  const faults = new Map<string, SendFault[]>();
  const updates: { update_id: number; [key: string]: unknown }[] = [];
  const files = new Map<string, { path: string; bytes: Buffer; sizeKnown: boolean }>();
  const hung: ServerResponse[] = [];
  let nextUpdateId = 1000;
  let nextMessageId = 1;
  let nextFile = 1;
  let nextCallback = 1;
  let polling = 0;
  let rateLimited = { count: 0, retryAfter: 1 };
  let redeliver: number | undefined;
  /** Telegram keeps the last allowed_updates given (getUpdates or setWebhook); [] is all but a few. */
  let allowedUpdates: string[] | undefined;
  const isAllowed = (update: Record<string, unknown>) =>
    !allowedUpdates?.length || allowedUpdates.some((kind) => kind in update);
  let wakePoller: (() => void) | undefined;
  /** callback_query ids handed to the bot (getUpdates or the webhook), with when first. */
  const deliveredCallbacks = new Map<string, number>();
  const answeredCallbacks = new Set<string>();
  const handedOut = (list: Record<string, unknown>[]) => {
    for (const update of list) {
      const id = (update.callback_query as { id?: unknown } | undefined)?.id;
      if (typeof id === 'string' && !deliveredCallbacks.has(id)) {
        deliveredCallbacks.set(id, Date.now());
      }
    }
    return list;
  };

  const push = (fields: Record<string, unknown>) => {
    const updateId = nextUpdateId++;
    updates.push({ update_id: updateId, ...fields });
    wakePoller?.();
    // With a webhook set, Telegram posts each update there (once here; `deliver` repeats it).
    if (fake.webhook && isAllowed(updates.at(-1) ?? {})) {
      fake
        .deliver(updateId)
        .catch((error: unknown) =>
          unexpected.push({ method: 'POST', path: 'webhook', reason: `delivery failed: ${error}` }),
        );
    }
    return updateId;
  };

  const fake: FakeTelegramServer = {
    url: '',
    token,
    sendRequests,
    sent,
    calls: [],
    drafts: [],
    callbackAnswers: [],
    refusedCallbackAnswers: [],
    callbackWindowMs: 15_000,
    commands: new Map(),
    webhook: undefined,
    unexpected,
    conflicts: 0,
    draftsRefused: false,
    down: false,
    blocked: new Set(),
    failNext: (...more) => fake.failMethod('sendMessage', ...more),
    failMethod(method, ...more) {
      faults.set(method, [...(faults.get(method) ?? []), ...more]);
    },
    rateLimit(count, retryAfter) {
      rateLimited = { count, retryAfter };
    },
    pushMessage: (chatId, text, languageCode = 'en') =>
      fake.pushUpdateMessage(chatId, { text }, { languageCode }),
    pushUpdateMessage(chatId, fields, options = {}) {
      const chatType = options.chatType ?? 'private';
      return push({
        message: {
          message_id: nextUpdateId,
          date: Math.floor(Date.now() / 1000),
          chat:
            chatType === 'private'
              ? { id: chatId, type: 'private', first_name: 'Test' }
              : { id: chatId, type: chatType, title: 'A group' },
          from: {
            id: chatType === 'private' ? chatId : 4242,
            is_bot: false,
            first_name: 'Test',
            language_code: options.languageCode ?? 'en',
          },
          ...fields,
        },
      });
    },
    pushUpdate: (fields) => push(fields),
    pushEditedMessage(chatId, text, languageCode = 'en') {
      const now = Math.floor(Date.now() / 1000);
      return push({
        edited_message: {
          message_id: nextUpdateId,
          date: now - 5,
          edit_date: now,
          chat: { id: chatId, type: 'private', first_name: 'Test' },
          from: { id: chatId, is_bot: false, first_name: 'Test', language_code: languageCode },
          text,
        },
      });
    },
    pushCallback(chatId, messageId, data, languageCode = 'en') {
      const id = `cb${nextCallback++}`;
      const message = sent.find((m) => m.messageId === messageId);
      push({
        callback_query: {
          id,
          from: { id: chatId, is_bot: false, first_name: 'Test', language_code: languageCode },
          chat_instance: `ci${chatId}`,
          data,
          message: {
            message_id: messageId,
            date: Math.floor(Date.now() / 1000),
            chat: { id: chatId, type: 'private', first_name: 'Test' },
            text: message?.visible ?? '',
          },
        },
      });
      return id;
    },
    addFile(bytes, extension, options) {
      const fileId = `file-${nextFile}`;
      const sizeKnown = options?.sizeKnown ?? true;
      files.set(fileId, { path: `documents/file_${nextFile}.${extension}`, bytes, sizeKnown });
      nextFile++;
      return { fileId, size: bytes.length };
    },
    redeliverFrom(fromUpdateId) {
      redeliver = fromUpdateId;
    },
    async deliver(updateId, options = {}) {
      if (!fake.webhook) throw new Error('fake Telegram: no webhook set');
      const update = updates.find((u) => u.update_id === updateId);
      if (update) handedOut([update]);
      const secret = options.secret === undefined ? fake.webhook.secret : options.secret;
      const response = await fetch(fake.webhook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(secret ? { 'x-telegram-bot-api-secret-token': secret } : {}),
        },
        body: JSON.stringify(update),
      });
      await response.arrayBuffer();
      return response.status;
    },
    sentTo: (chatId) => sent.filter((m) => m.chatId === chatId),
    visibleIn: (chatId) => sent.filter((m) => m.chatId === chatId).map((m) => m.visible),
    callsOf: (method) => fake.calls.filter((c) => c.method === method),
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
  const ok = (res: ServerResponse, result: unknown) => sendJson(res, 200, { ok: true, result });
  /** `res`, whose next JSON answer is ended as `ending` says (its status kept for `calls`). */
  const endingAs = (res: ServerResponse, ending: BodyEnding): ServerResponse => {
    const ended = Object.create(res) as ServerResponse;
    let status = 200;
    ended.writeHead = ((code: number) => {
      status = code;
      return ended;
    }) as typeof res.writeHead;
    ended.end = ((text: string) => {
      if (status !== 200) {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(text);
      } else endBody(res, text, ending);
      return ended;
    }) as typeof res.end;
    return ended;
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = await readRequest(req);
    const file = /^\/file\/bot([^/]+)\/(.+)$/.exec(request.path);
    if (file && request.method === 'GET') return download(file[1] ?? '', file[2] ?? '', res);
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(request.path);
    if (!match || request.method !== 'POST') {
      unexpected.push({ method: request.method, path: request.path, reason: 'no such route' });
      return fail(res, 404, 'Not Found');
    }
    if (match[1] !== token) {
      unexpected.push({ method: request.method, path: '/bot<wrong>/…', reason: 'wrong token' });
      return fail(res, 401, 'Unauthorized');
    }
    const method = match[2] as string;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const call: BotCall = { method, body, at: Date.now() };
    fake.calls.push(call);
    const answer = res.writeHead.bind(res);
    res.writeHead = ((status: number, ...rest: never[]) => {
      call.status = status;
      return answer(status, ...rest);
    }) as typeof res.writeHead;
    if (method === 'sendMessage') sendRequests.push(request);
    if (method === 'getUpdates') return getUpdates(body, res);
    const handler = METHODS[method];
    if (!handler) {
      unexpected.push({ method: request.method, path: `/bot…/${method}`, reason: 'unused method' });
      return fail(res, 404, 'Not Found: method not found');
    }
    if (method === 'sendMessage' && fake.down) {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body><h1>502 Bad Gateway</h1></body></html>');
      return;
    }
    const fault = faults.get(method)?.shift();
    if (fault?.kind === 'hang') {
      hung.push(res);
      return;
    }
    if (fault?.kind === 'ending') {
      hung.push(res);
      // A proxy's 502: the call never reached Telegram.
      if (fault.ending === 'html-502') return endBody(res, '', fault.ending);
      return handler(body, endingAs(res, fault.ending));
    }
    if (fault) return fail(res, fault.status, fault.description, fault.retryAfter);
    if (SENDING.has(method) && rateLimited.count > 0) {
      rateLimited.count--;
      return fail(
        res,
        429,
        `Too Many Requests: retry after ${rateLimited.retryAfter}`,
        rateLimited.retryAfter,
      );
    }
    const chatId = body.chat_id;
    if (chatId !== undefined && fake.blocked.has(String(chatId))) {
      return fail(res, 403, 'Forbidden: bot was blocked by the user');
    }
    return handler(body, res);
  }

  /** The text as the user would see it, or the 400 Telegram answers. */
  function visibleText(body: Record<string, unknown>): { text: string } | { error: string } {
    if (typeof body.text !== 'string' || body.text.length === 0) {
      return { error: 'Bad Request: message text is empty' };
    }
    // telegram-bot-api reads at most 32 KiB of `text`, tags and entities included.
    if (Buffer.byteLength(body.text) > 32_768) return { error: 'Bad Request: text is too long' };
    let text = body.text;
    if (body.parse_mode === 'HTML') {
      const parsed = parseTelegramHtml(body.text);
      if ('error' in parsed) return { error: `Bad Request: can't parse entities: ${parsed.error}` };
      text = parsed.text;
    } else if (body.parse_mode !== undefined) {
      return { error: 'Bad Request: unsupported parse_mode in this fake' };
    }
    // As telegram-bot-api words what TDLib says of a text with nothing to show once parsed.
    if (text.trim().length === 0) return { error: 'Bad Request: text must be non-empty' };
    // Telegram counts the text it shows; UTF-16 units here, as many as its code points or more.
    if (text.length > 4096) return { error: 'Bad Request: message is too long' };
    return { text };
  }

  const METHODS: Record<string, (body: Record<string, unknown>, res: ServerResponse) => void> = {
    sendMessage(body, res) {
      const chatId = body.chat_id;
      if (typeof chatId !== 'string' && typeof chatId !== 'number') {
        unexpected.push({ method: 'POST', path: '/sendMessage', reason: 'no chat_id' });
        return fail(res, 400, 'Bad Request: chat not found');
      }
      const shown = visibleText(body);
      if ('error' in shown) return fail(res, 400, shown.error);
      const messageId = nextMessageId++;
      sent.push({
        chatId: String(chatId),
        text: body.text as string,
        messageId,
        parseMode: body.parse_mode as string | undefined,
        visible: shown.text,
        replyMarkup: body.reply_markup,
        edits: [],
      });
      ok(res, {
        message_id: messageId,
        date: Math.floor(Date.now() / 1000),
        chat: { id: Number(chatId), type: 'private' },
        text: shown.text,
      });
    },
    sendMessageDraft(body, res) {
      if (fake.draftsRefused) {
        return fail(res, 400, 'Bad Request: TEXTDRAFT_PEER_INVALID');
      }
      if (typeof body.draft_id !== 'number' || body.draft_id === 0) {
        return fail(res, 400, 'Bad Request: invalid draft_id');
      }
      const shown = visibleText(body);
      if ('error' in shown) return fail(res, 400, shown.error);
      fake.drafts.push({
        chatId: String(body.chat_id),
        draftId: body.draft_id,
        visible: shown.text,
        at: Date.now(),
      });
      ok(res, true);
    },
    editMessageText(body, res) {
      const message = sent.find(
        (m) => m.messageId === body.message_id && m.chatId === String(body.chat_id),
      );
      if (!message) return fail(res, 400, 'Bad Request: message to edit not found');
      const shown = visibleText(body);
      if ('error' in shown) return fail(res, 400, shown.error);
      const sameMarkup =
        JSON.stringify(body.reply_markup ?? null) === JSON.stringify(message.replyMarkup ?? null);
      if (shown.text === message.visible && sameMarkup && body.parse_mode === message.parseMode) {
        return fail(
          res,
          400,
          'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
        );
      }
      message.edits.push(shown.text);
      message.visible = shown.text;
      message.text = body.text as string;
      message.parseMode = body.parse_mode as string | undefined;
      if (body.reply_markup !== undefined) message.replyMarkup = body.reply_markup;
      ok(res, { message_id: message.messageId, chat: { id: Number(body.chat_id) } });
    },
    editMessageReplyMarkup(body, res) {
      const message = sent.find(
        (m) => m.messageId === body.message_id && m.chatId === String(body.chat_id),
      );
      if (!message) return fail(res, 400, 'Bad Request: message to edit not found');
      if (
        JSON.stringify(body.reply_markup ?? null) === JSON.stringify(message.replyMarkup ?? null)
      ) {
        return fail(
          res,
          400,
          'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
        );
      }
      message.replyMarkup = body.reply_markup;
      ok(res, {
        message_id: message.messageId,
        date: Math.floor(Date.now() / 1000),
        chat: { id: Number(body.chat_id), type: 'private' },
        text: message.visible,
        ...(body.reply_markup ? { reply_markup: body.reply_markup } : {}),
      });
    },
    sendChatAction: (_body, res) => ok(res, true),
    answerCallbackQuery(body, res) {
      const id = String(body.callback_query_id);
      const deliveredAt = deliveredCallbacks.get(id);
      const reason =
        deliveredAt === undefined
          ? 'unknown id'
          : answeredCallbacks.has(id)
            ? 'answered twice'
            : Date.now() - deliveredAt >= fake.callbackWindowMs
              ? 'too old'
              : undefined;
      if (reason) {
        fake.refusedCallbackAnswers.push({ id, reason, at: Date.now() });
        unexpected.push({
          method: 'POST',
          path: '/answerCallbackQuery',
          reason: `${reason}: ${id}`,
        });
        return fail(res, 400, QUERY_TOO_OLD);
      }
      answeredCallbacks.add(id);
      fake.callbackAnswers.push({ id, text: body.text as string });
      ok(res, true);
    },
    getFile(body, res) {
      const file = files.get(String(body.file_id));
      if (!file) return fail(res, 400, 'Bad Request: invalid file_id');
      ok(res, {
        file_id: body.file_id,
        file_unique_id: `u${body.file_id}`,
        ...(file.sizeKnown ? { file_size: file.bytes.length } : {}),
        file_path: file.path,
      });
    },
    setMyCommands(body, res) {
      fake.commands.set(
        String(body.language_code ?? ''),
        body.commands as { command: string; description: string }[],
      );
      ok(res, true);
    },
    setWebhook(body, res) {
      if (typeof body.url !== 'string') return fail(res, 400, 'Bad Request: bad webhook');
      fake.webhook = { url: body.url, secret: body.secret_token as string | undefined };
      if (Array.isArray(body.allowed_updates)) allowedUpdates = body.allowed_updates as string[];
      ok(res, true);
    },
    deleteWebhook(body, res) {
      fake.webhook = undefined;
      // Telegram keeps the updates not yet taken unless asked to drop them.
      if (body.drop_pending_updates === true) updates.length = 0;
      ok(res, true);
    },
  };

  function download(fileToken: string, path: string, res: ServerResponse) {
    const file = [...files.values()].find((f) => f.path === path);
    if (fileToken !== token || !file) {
      unexpected.push({ method: 'GET', path: '/file/…', reason: 'no such file or wrong token' });
      return fail(res, 404, 'Not Found');
    }
    const fault = faults.get('download')?.shift();
    if (fault?.kind === 'ending') {
      hung.push(res);
      return endBody(res, file.bytes, fault.ending, 'application/octet-stream');
    }
    if (fault?.kind === 'hang') {
      hung.push(res);
      return;
    }
    if (fault) return fail(res, fault.status, fault.description);
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': file.bytes.length,
    });
    res.end(file.bytes);
  }

  async function getUpdates(body: Record<string, unknown>, res: ServerResponse): Promise<void> {
    if (fake.webhook) {
      unexpected.push({
        method: 'POST',
        path: '/getUpdates',
        reason: 'polling with a webhook set',
      });
      return fail(
        res,
        409,
        "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
      );
    }
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
      const offset = redeliver ?? (body.offset as number | undefined) ?? 0;
      redeliver = undefined;
      if (Array.isArray(body.allowed_updates)) allowedUpdates = body.allowed_updates as string[];
      // Updates of a kind not asked for are never handed out.
      const pending = () => updates.filter((u) => u.update_id >= offset && isAllowed(u));
      const fault = faults.get('getUpdates')?.shift();
      if (fault?.kind === 'ending') {
        hung.push(res);
        return endBody(
          res,
          JSON.stringify({ ok: true, result: handedOut(pending()) }),
          fault.ending,
        );
      }
      const timeout = (body.timeout as number | undefined) ?? 0;
      if (pending().length === 0 && timeout > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, timeout * 1000);
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
      if (!res.destroyed) ok(res, handedOut(pending()));
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

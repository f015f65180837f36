import type { Logger } from 'pino';
import type { Principal } from '../accounts/principal.ts';
import type { ChatEvent, ChatRequest } from '../assistant/chat-events.ts';
import { questionTitle } from '../conversations/question-title.ts';
import { AppError } from '../errors.ts';
import { markdownLiteral } from '../markdown-literal.ts';
import type { AutomationRepository, ClaimedRun } from '../storage/automation-repository.ts';

/** Where a result goes besides the web client: a Telegram chat (src/telegram/). */
export interface AutomationDelivery {
  /** Sends a Markdown text; throws when it was not sent. */
  send(chatId: string, markdown: string, signal: AbortSignal): Promise<void>;
}

export interface AutomationRunDependencies {
  chats: { chat(request: ChatRequest, signal: AbortSignal): AsyncIterable<ChatEvent> };
  /** ConversationService.create: the automation's own conversation, not made current. */
  createConversation(userId: string, title: string): Promise<{ id: string }>;
  automations: Pick<AutomationRepository, 'keepConversation' | 'runExists' | 'runWanted'>;
  /** UsageLimits.admitChat: throws a 429 AppError over a limit. */
  admitChat(principal: Principal, userId: string): Promise<unknown>;
  /** Absent without TELEGRAM_BOT_TOKEN: results go to the web client only. */
  delivery?: AutomationDelivery | undefined;
  /** TELEGRAM_DEFAULT_CHAT_ID: for users who linked no chat, as for reminder notices. */
  defaultChatId?: string | undefined;
  /** ANSWER_MAX_SECONDS, in ms: a run's answer has a chat's time limit. */
  answerMaxMs: number;
  logger: Logger;
}

/** What a run came to, before its row records it. */
export interface RunResult {
  /** `skipped`: paused before it was answered (a scheduled run; "run now" runs regardless). */
  status: 'done' | 'failed' | 'refused' | 'skipped';
  /** Our words (a limit's message, an error code's), never the user's or the model's. */
  error?: string | undefined;
  chatRunId?: string | undefined;
  deliveredTo?: string | undefined;
}

/**
 * One run: the user's own assistant answers the automation's prompt in the automation's
 * conversation, as the user (same limits, same tools, one chat at a time per user), driven to
 * its end here since nobody is listening; the answer then goes to Telegram once. The web
 * client sees it in the conversation and by the run's unread mark.
 */
export async function runAutomation(
  deps: AutomationRunDependencies,
  run: ClaimedRun,
  signal: AbortSignal,
): Promise<RunResult> {
  const { userId } = run;
  const log = deps.logger.child({ automationId: run.automationId, userId });
  const principal: Principal = { kind: 'user', userId, keyId: undefined };
  try {
    await deps.admitChat(principal, userId);
  } catch (error) {
    if (!AppError.isInstance(error) || error.status !== 429) throw error;
    log.info({ code: error.code }, 'automation run refused by a limit');
    return { status: 'refused', error: error.message };
  }
  const conversationId =
    run.conversationId ??
    (await deps.automations.keepConversation(
      run.automationId,
      (
        await deps.createConversation(userId, conversationTitle(run.name))
      ).id,
    ));
  let text = '';
  let failure: string | undefined;
  let chatRunId: string | undefined;
  // A chat's time limit, as for an answer nobody listens to: what was written is kept (the
  // conversation shows it, interrupted) and the run fails, counting towards the pause. It
  // counts from the user's turn: a run that first waited for the user's own chat to end (which
  // has the same limit) still gets the whole of it for its answer. The wait itself is bounded
  // by the job's budget (automationPolicy: room for both).
  const timeLimit = new AbortController();
  let limitTimer: NodeJS.Timeout | undefined;
  let ended = false;
  // What the chat's check found, once the user's turn was taken (a holder: set in a callback).
  const asked: { wanted: Awaited<ReturnType<typeof deps.automations.runWanted>> } = {
    wanted: 'yes',
  };
  try {
    for await (const event of deps.chats.chat(
      {
        userId,
        conversationId,
        message: run.prompt,
        showThinking: false,
        // Deleted or paused while the run waited for the user's own chat to end: not answered.
        stillWanted: async () => {
          limitTimer = setTimeout(
            () => timeLimit.abort(new DOMException('the time limit passed', 'TimeoutError')),
            deps.answerMaxMs,
          );
          asked.wanted = await deps.automations.runWanted(run.runId);
          return asked.wanted === 'yes';
        },
      },
      AbortSignal.any([signal, timeLimit.signal]),
    )) {
      if (event.type === 'text') text += event.text;
      else if (event.type === 'error') failure = `${event.code}: ${event.message}`;
      else if (event.type === 'done') {
        chatRunId = event.runId;
        ended = true;
      }
    }
  } finally {
    clearTimeout(limitTimer);
  }
  if (!ended && asked.wanted === 'paused') {
    log.info('automation paused before its run was answered: prompt not answered');
    return { status: 'skipped', error: 'paused before it was answered' };
  }
  if (!ended && asked.wanted === 'deleted') {
    log.info('automation deleted before its run was answered: prompt not answered');
    return { status: 'done' };
  }
  // Stopped by the job runner (shutdown, or the job's budget): it tells which from the signal.
  if (signal.aborted) throw signal.reason ?? new Error('the run was stopped');
  if (timeLimit.signal.aborted) {
    const seconds = Math.round(deps.answerMaxMs / 1000);
    log.info({ code: 'answer_timeout' }, 'automation run stopped at its time limit');
    return {
      status: 'failed',
      error: `answer_timeout: the answer took longer than ${seconds} s (ANSWER_MAX_SECONDS)`,
      chatRunId,
    };
  }
  if (failure !== undefined || !text.trim()) {
    return { status: 'failed', error: failure ?? 'the assistant gave no answer', chatRunId };
  }
  // Deleted while it ran (the automation, or the user with it): its answer stays in the
  // conversation, but nothing more is sent to someone who has just said "stop".
  if (!(await deps.automations.runExists(run.runId))) {
    log.info({ chatRunId }, 'automation deleted during its run: result not sent');
    return { status: 'done', chatRunId };
  }
  const deliveredTo = ['web'];
  const chatId = run.chatId ?? deps.defaultChatId;
  if (deps.delivery && chatId) {
    try {
      await deps.delivery.send(chatId, `🔁 **${markdownLiteral(run.name)}**\n\n${text}`, signal);
      deliveredTo.unshift('telegram');
    } catch (error) {
      // The answer is in the conversation: the run is done, the web client shows it.
      log.warn({ err: error }, 'automation result not sent to Telegram');
    }
  }
  log.info({ chatRunId, deliveredTo }, 'automation run done');
  return { status: 'done', chatRunId, deliveredTo: deliveredTo.join(',') };
}

/**
 * The name as a conversation's title, within a title's limits (60 characters, one line): a
 * name may be longer (100), and one the assistant's tool kept before it took the API's
 * one-line rule may hold line breaks.
 */
const conversationTitle = (name: string) => questionTitle(name.replace(/\p{Cc}/gu, ' '));
